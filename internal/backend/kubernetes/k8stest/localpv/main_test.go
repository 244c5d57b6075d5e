package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func claim(name, class string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("2Gi"),
			}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	return pvc
}

// start runs a controller on a fake cluster holding objs, until the test ends.
func start(t *testing.T, objs ...runtime.Object) (*fake.Clientset, string) {
	t.Helper()
	client := fake.NewClientset(objs...)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	c := newController(client, dir, "node-1", 0)
	go func() { done <- c.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return client, dir
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProvisionAndDelete(t *testing.T) {
	client, dir := start(t, claim("a", StorageClass), claim("other", "other-class"), claim("none", ""))
	ctx := context.Background()
	var pv *corev1.PersistentVolume
	waitFor(t, "volume pvc-uid-a", func() bool {
		var err error
		pv, err = client.CoreV1().PersistentVolumes().Get(ctx, "pvc-uid-a", metav1.GetOptions{})
		return err == nil
	})
	path := filepath.Join(dir, "pvc-uid-a")
	if pv.Spec.Local == nil || pv.Spec.Local.Path != path {
		t.Fatalf("volume source %+v, want local at %s", pv.Spec.PersistentVolumeSource, path)
	}
	if r := pv.Spec.ClaimRef; r == nil || r.Namespace != "ns" || r.Name != "a" || r.UID != "uid-a" {
		t.Errorf("claimRef %+v", r)
	}
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.String() != "2Gi" {
		t.Errorf("capacity %s", got.String())
	}
	if pv.Spec.StorageClassName != StorageClass || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Annotations[annProvisionedBy] != Provisioner || len(pv.Spec.AccessModes) != 1 || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("volume %+v", pv)
	}
	term := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
	if term.Key != corev1.LabelHostname || term.Values[0] != "node-1" {
		t.Errorf("node affinity %+v", term)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o755 || !fi.IsDir() {
		t.Fatalf("directory: %v %v", fi, err)
	}
	if pvs, _ := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); len(pvs.Items) != 1 {
		t.Errorf("%d volumes, want only the one of class %s", len(pvs.Items), StorageClass)
	}

	// The claim is gone: the persistent volume controller marks the volume Released.
	os.WriteFile(filepath.Join(path, "f"), []byte("x"), 0o644)
	pv.Status.Phase = corev1.VolumeReleased
	if _, err := client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the volume's deletion", func() bool {
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("directory still there: %v", err)
	}
}

func TestRefusesPathOutsideDir(t *testing.T) {
	elsewhere := t.TempDir()
	pv := newVolume(claim("x", StorageClass), elsewhere, "node-1")
	pv.Status.Phase = corev1.VolumeReleased
	client, _ := start(t, pv)
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("%s removed: %v", elsewhere, err)
	}
	if _, err := client.CoreV1().PersistentVolumes().Get(context.Background(), pv.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("volume deleted: %v", err)
	}
}

func TestManyClaims(t *testing.T) {
	var objs []runtime.Object
	for i := range 50 {
		objs = append(objs, claim(fmt.Sprintf("c%d", i), StorageClass))
	}
	client, dir := start(t, objs...)
	waitFor(t, "50 volumes", func() bool {
		pvs, err := client.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
		return err == nil && len(pvs.Items) == 50
	})
	if ents, _ := os.ReadDir(dir); len(ents) != 50 {
		t.Errorf("%d directories, want 50", len(ents))
	}
}
