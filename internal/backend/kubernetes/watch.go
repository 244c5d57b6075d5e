package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// watch is one namespace's watch of paddock's pods and claims: every state the backend
// reports and every wait it does reads from it, so a hundred sandboxes cost one watch
// per namespace, not a poll each.
type watch struct {
	ns           string
	pods, claims cache.Indexer
	stop         chan struct{}
	synced       []cache.InformerSynced

	mu      sync.Mutex
	changed chan struct{} // closed, and made anew, at every change
}

// watch returns the namespace's watch, started and synced on first use.
func (c *cluster) watch(ctx context.Context, ns string) (*watch, error) {
	c.mu.Lock()
	w, ok := c.watches[ns]
	if !ok {
		w = &watch{stop: make(chan struct{}), changed: make(chan struct{})}
		notify := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { w.notify() },
			UpdateFunc: func(any, any) { w.notify() },
			DeleteFunc: func(any) { w.notify() },
		}
		mine := labels.Set{LabelManaged: managedBy}.String()
		informer := func(resource string, obj runtime.Object, newList func() runtime.Object) cache.SharedIndexInformer {
			lw := &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					o.LabelSelector = mine
					out := newList()
					return out, list(ctx, c.api.core, ns, resource, &o, out)
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (apiwatch.Interface, error) {
					o.LabelSelector = mine
					return watchOf(ctx, c.api.core, ns, resource, &o)
				},
			}
			inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
			inf.AddEventHandler(notify)
			go inf.Run(w.stop)
			w.synced = append(w.synced, inf.HasSynced)
			return inf
		}
		w.pods = informer("pods", &corev1.Pod{}, func() runtime.Object { return &corev1.PodList{} }).GetIndexer()
		w.claims = informer("persistentvolumeclaims", &corev1.PersistentVolumeClaim{},
			func() runtime.Object { return &corev1.PersistentVolumeClaimList{} }).GetIndexer()
		w.ns = ns
		c.watches[ns] = w
	}
	c.mu.Unlock()
	// Every caller waits for the first list: a state read before it would say missing.
	// A list the API server refuses is retried for ever by the informer: not waited on.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), w.synced...) {
		return nil, fmt.Errorf("watch pods in namespace %s: %w", ns, context.Cause(ctx))
	}
	return w, nil
}

func (w *watch) notify() {
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

// next is closed at the next change.
func (w *watch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// pod and claim read the watch's cache; nil when there is none.
func (w *watch) pod(name string) *corev1.Pod {
	obj, ok, err := w.pods.GetByKey(w.ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	return obj.(*corev1.Pod)
}

func (w *watch) claim(name string) *corev1.PersistentVolumeClaim {
	obj, ok, err := w.claims.GetByKey(w.ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	return obj.(*corev1.PersistentVolumeClaim)
}

// until waits for cond to hold over the watch's cache, checking at every change (and
// every few seconds, in case a change is missed), until ctx ends.
func (w *watch) until(ctx context.Context, cond func() (bool, error)) error {
	for {
		next := w.next()
		done, err := cond()
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-next:
		case <-time.After(5 * time.Second):
		}
	}
}
