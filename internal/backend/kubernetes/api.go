package kubernetes

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The API groups paddock uses, over client-go's REST client with a scheme of their types
// alone, made when the first cluster is. (client-go's typed clientset registers every
// API group of Kubernetes when the program starts: 3.7 ms of every paddock command,
// hooks inside sandboxes included, for a backend most never use.)
var (
	schemeOnce sync.Once
	apiScheme  *runtime.Scheme
	codecs     serializer.CodecFactory
	params     runtime.ParameterCodec
)

func initScheme() {
	schemeOnce.Do(func() {
		apiScheme = runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkingv1.AddToScheme,
			authorizationv1.AddToScheme, storagev1.AddToScheme} {
			if err := add(apiScheme); err != nil {
				panic(err) // the types' own registrations: cannot fail
			}
		}
		metav1.AddToGroupVersion(apiScheme, schema.GroupVersion{Version: "v1"})
		codecs = serializer.NewCodecFactory(apiScheme)
		params = runtime.NewParameterCodec(apiScheme)
	})
}

// kube is a cluster's REST clients, one per API group, over one HTTP client.
type kube struct {
	core, networking, authorization, storage *rest.RESTClient
}

func newKube(cfg *rest.Config) (*kube, error) {
	initScheme()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	client := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath = &gv, apiPath
		c.NegotiatedSerializer = codecs.WithoutConversion()
		return rest.RESTClientForConfigAndClient(c, hc)
	}
	var k kube
	for _, g := range []struct {
		rc   **rest.RESTClient
		gv   schema.GroupVersion
		path string
	}{
		{&k.core, corev1.SchemeGroupVersion, "/api"},
		{&k.networking, networkingv1.SchemeGroupVersion, "/apis"},
		{&k.authorization, authorizationv1.SchemeGroupVersion, "/apis"},
		{&k.storage, storagev1.SchemeGroupVersion, "/apis"},
	} {
		if *g.rc, err = client(g.gv, g.path); err != nil {
			return nil, fmt.Errorf("kubernetes client: %w", err)
		}
	}
	return &k, nil
}

func create(ctx context.Context, rc *rest.RESTClient, ns, resource string, obj, out runtime.Object) error {
	return rc.Post().NamespaceIfScoped(ns, ns != "").Resource(resource).Body(obj).Do(ctx).Into(out)
}

func get(ctx context.Context, rc *rest.RESTClient, ns, resource, name string, out runtime.Object) error {
	return rc.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).Name(name).Do(ctx).Into(out)
}

func remove(ctx context.Context, rc *rest.RESTClient, ns, resource, name string, opts *metav1.DeleteOptions) error {
	return rc.Delete().NamespaceIfScoped(ns, ns != "").Resource(resource).Name(name).Body(opts).Do(ctx).Error()
}

func list(ctx context.Context, rc *rest.RESTClient, ns, resource string, opts *metav1.ListOptions, out runtime.Object) error {
	return rc.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).VersionedParams(opts, params).Do(ctx).Into(out)
}

func watchOf(ctx context.Context, rc *rest.RESTClient, ns, resource string, opts *metav1.ListOptions) (apiwatch.Interface, error) {
	opts.Watch = true
	return rc.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).VersionedParams(opts, params).Watch(ctx)
}
