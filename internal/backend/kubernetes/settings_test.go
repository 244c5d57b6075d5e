package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings(nil)
	if err != nil || s.Namespace != "paddock" || s.NetworkIsolation != "netns" || !s.ReadOnlyRoot {
		t.Fatalf("defaults: %+v, %v", s, err)
	}
	for opts, want := range map[string]map[string]any{
		`unknown setting "nmespace"`:                    {"nmespace": "x"},
		`storage_size = "ten" is not a quantity`:        {"storage_size": "ten"},
		`image_pull_policy is Always, IfNotPresent`:     {"image_pull_policy": "Sometimes"},
		`network_isolation is netns or policy`:          {"network_isolation": "none"},
		`"Paddock" is not a namespace name`:             {"namespace": "Paddock"},
		`pids_limit and start_timeout must be positive`: {"pids_limit": -1},
	} {
		if _, err := ParseSettings(want); err == nil || !strings.Contains(err.Error(), opts) {
			t.Errorf("%v: %v, want %q", want, err, opts)
		}
	}
}

// TestPullPolicy: an image loaded into the nodes (no registry in its name) is never
// pulled; one from a registry is pulled when the node lacks it; the config wins.
func TestPullPolicy(t *testing.T) {
	k := &Kubernetes{settings: DefaultSettings()}
	for image, want := range map[string]corev1.PullPolicy{
		"paddock/sandbox:latest":               corev1.PullNever,
		"sandbox":                              corev1.PullNever,
		"registry.example.com/team/sandbox:v1": corev1.PullIfNotPresent,
		"localhost:5000/sandbox":               corev1.PullIfNotPresent,
		"localhost/sandbox":                    corev1.PullIfNotPresent,
		"ghcr.io/org/sandbox@sha256:abc":       corev1.PullIfNotPresent,
	} {
		if got := k.pullPolicy(image); got != want {
			t.Errorf("%s: %s, want %s", image, got, want)
		}
	}
	k.settings.ImagePullPolicy = "Always"
	if got := k.pullPolicy("paddock/sandbox:latest"); got != corev1.PullAlways {
		t.Errorf("configured Always: %s", got)
	}
}

// TestRuntimeAllowsIOUring: containerd before 1.7 lets io_uring through its default
// seccomp profile; 1.7 and later, and other runtimes, do not (as far as paddock knows).
func TestRuntimeAllowsIOUring(t *testing.T) {
	for rt, want := range map[string]bool{"containerd://1.6.20": true, "containerd://1.5.0": true, "containerd://v1.6.2": true,
		"containerd://1.7.0": false, "containerd://2.0.1": false, "cri-o://1.30.0": false, "containerd://dev": false} {
		if got := runtimeAllowsIOUring(rt) != ""; got != want {
			t.Errorf("%s: allows io_uring %v, want %v", rt, got, want)
		}
	}
}
