// Command localpv is the storage provisioner of the single-node test cluster that
// scripts/k8s-up.sh brings up: that cluster has none, and the kubernetes backend makes a
// PersistentVolumeClaim per sandbox.
//
//	localpv --kubeconfig FILE --dir DIR --node NODE
//
// For every claim of the storage class paddock-local that is Pending and unbound, it makes
// the directory DIR/pvc-<claim uid> (root's, mode 0755) and a PersistentVolume of the same
// name: a `local` volume at that directory, pinned to NODE, pre-bound to the claim (the
// persistent volume controller then binds the claim at once). The kubelet's local volume
// plugin applies a pod's fsGroup to the directory, so a pod running as any uid with that
// fsGroup can write to it. When a volume it made is Released (its claim is gone) or
// Failed, it removes the directory and deletes the volume. Every action is one line on
// stderr. It stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

const (
	// StorageClass is the class whose claims this provisioner serves; k8s-up.sh makes it
	// the cluster's default, so claims without a storageClassName get it.
	StorageClass = "paddock-local"
	// Provisioner is the class's provisioner, and the value of the volumes' provisioned-by
	// annotation, by which localpv knows the volumes it made (and removes only those).
	Provisioner = "paddock.dev/local"

	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	annBetaClass     = "volume.beta.kubernetes.io/storage-class"

	// workers: claims are provisioned this many at a time. Each is a mkdir and one API
	// call; a few in parallel keep 50 claims made at once within a second or so.
	workers = 4
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (default $KUBECONFIG)")
	dir := flag.String("dir", "", "absolute directory the volumes' directories are made in (made if missing)")
	node := flag.String("node", "", "name of the node the directories are on (the volumes' node affinity)")
	flag.Parse()
	log.SetPrefix("localpv: ")
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if flag.NArg() > 0 || *kubeconfig == "" || *dir == "" || *node == "" || !filepath.IsAbs(*dir) {
		fmt.Fprintln(os.Stderr, "usage: localpv --kubeconfig FILE --dir ABSOLUTE_DIR --node NODE")
		flag.PrintDefaults()
		os.Exit(2)
	}
	if err := run(*kubeconfig, filepath.Clean(*dir), *node); err != nil {
		log.Fatal(err)
	}
}

func run(kubeconfig, dir, node string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	// client-go's default of 5 requests a second would take 10 s to provision the 50
	// claims a benchmark makes at once.
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "paddock-localpv"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	c := newController(client, dir, node, 5*time.Minute)
	err = c.run(ctx)
	log.Print("stopped")
	return err
}

// item is one unit of work: a claim (namespace and name) or a volume (name alone).
type item struct {
	volume          bool
	namespace, name string
}

type controller struct {
	client    kubernetes.Interface
	dir, node string
	factory   informers.SharedInformerFactory
	claims    corelisters.PersistentVolumeClaimLister
	volumes   corelisters.PersistentVolumeLister
	queue     workqueue.TypedRateLimitingInterface[item]
}

// newController watches claims in all namespaces and all volumes, resyncing every resync
// (a safety net: failed work is retried by the queue).
func newController(client kubernetes.Interface, dir, node string, resync time.Duration) *controller {
	f := informers.NewSharedInformerFactory(client, resync)
	c := &controller{
		client: client, dir: dir, node: node, factory: f,
		claims:  f.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: f.Core().V1().PersistentVolumes().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[item](),
			workqueue.TypedRateLimitingQueueConfig[item]{Name: "localpv"}),
	}
	claim := func(obj any) {
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && wantsVolume(pvc) {
			c.queue.Add(item{namespace: pvc.Namespace, name: pvc.Name})
		}
	}
	volume := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && ours(pv) && released(pv) {
			c.queue.Add(item{volume: true, name: pv.Name})
		}
	}
	f.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: claim, UpdateFunc: func(_, obj any) { claim(obj) },
	})
	f.Core().V1().PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: volume, UpdateFunc: func(_, obj any) { volume(obj) },
	})
	return c
}

// run works until ctx is done.
func (c *controller) run(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cannot list %v", typ)
		}
	}
	log.Printf("ready (pid %d): claims of class %s get volumes in %s on node %s", os.Getpid(), StorageClass, c.dir, c.node)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	c.factory.Shutdown()
	return nil
}

// next does one item of the queue; false once the queue is shut down.
func (c *controller) next(ctx context.Context) bool {
	it, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(it)
	var err error
	if it.volume {
		err = c.syncVolume(ctx, it.name)
	} else {
		err = c.syncClaim(ctx, it.namespace, it.name)
	}
	if err != nil && ctx.Err() == nil {
		what := "claim " + it.namespace + "/" + it.name
		if it.volume {
			what = "volume " + it.name
		}
		log.Printf("%s: %v (retrying)", what, err)
		c.queue.AddRateLimited(it)
		return true
	}
	c.queue.Forget(it)
	return true
}

// className is the claim's storage class (the beta annotation still wins, as in the
// persistent volume controller).
func className(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[annBetaClass]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// wantsVolume: the claim is of our class, Pending, bound to no volume, and not being
// deleted.
func wantsVolume(pvc *corev1.PersistentVolumeClaim) bool {
	return className(pvc) == StorageClass && pvc.Spec.VolumeName == "" && pvc.DeletionTimestamp == nil &&
		(pvc.Status.Phase == corev1.ClaimPending || pvc.Status.Phase == "")
}

func ours(pv *corev1.PersistentVolume) bool { return pv.Annotations[annProvisionedBy] == Provisioner }

func released(pv *corev1.PersistentVolume) bool {
	return pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed
}

func volumeName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

func (c *controller) syncClaim(ctx context.Context, namespace, name string) error {
	pvc, err := c.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if !wantsVolume(pvc) {
		return nil
	}
	pvName := volumeName(pvc)
	if _, err := c.volumes.Get(pvName); err == nil {
		return nil // made already; the claim is being bound to it
	}
	if pvc.Spec.VolumeMode != nil && *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		log.Printf("claim %s/%s: volumeMode %s: only Filesystem volumes can be made, skipped", namespace, name, *pvc.Spec.VolumeMode)
		return nil
	}
	path := filepath.Join(c.dir, pvName)
	// Root's and 0755: the kubelet gives the pod's fsGroup the directory when it mounts
	// the volume (group-writable, setgid), so only the pods of the claim can write to it.
	if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := os.Chmod(path, 0o755); err != nil { // whatever the umask
		return err
	}
	pv := newVolume(pvc, path, c.node)
	if _, err := c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		return nil
	} else if err != nil {
		return err
	}
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	log.Printf("provisioned volume %s (%s, %v) at %s for claim %s/%s", pvName, size.String(), pv.Spec.AccessModes, path, namespace, name)
	return nil
}

// newVolume is the claim's volume: a local volume at path, on node, pre-bound to the claim.
func newVolume(pvc *corev1.PersistentVolumeClaim, path, node string) *corev1.PersistentVolume {
	mode := corev1.PersistentVolumeFilesystem
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi") // the API requires a request; never here
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        volumeName(pvc),
			Annotations: map[string]string{annProvisionedBy: Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: append([]corev1.PersistentVolumeAccessMode(nil), pvc.Spec.AccessModes...),
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              StorageClass,
			VolumeMode:                    &mode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: path},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}
}

// volumeDir is the directory of a volume localpv made: DIR/<volume name>, nothing else.
func (c *controller) volumeDir(pv *corev1.PersistentVolume) (string, error) {
	if pv.Spec.Local == nil {
		return "", fmt.Errorf("not a local volume")
	}
	p := pv.Spec.Local.Path
	if p != filepath.Join(c.dir, pv.Name) || filepath.Dir(p) != c.dir {
		return "", fmt.Errorf("its path %q is not %s", p, filepath.Join(c.dir, pv.Name))
	}
	return p, nil
}

func (c *controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if !ours(pv) || !released(pv) {
		return nil
	}
	path, err := c.volumeDir(pv)
	if err != nil {
		// Not retried: a volume made by hand with our annotation is left to its maker.
		log.Printf("volume %s: refusing to remove it: %v", name, err)
		return nil
	}
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	if pv.DeletionTimestamp != nil {
		return nil // deleted already, waiting for its finalizers
	}
	err = c.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID},
	})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	claim := "?"
	if r := pv.Spec.ClaimRef; r != nil {
		claim = r.Namespace + "/" + r.Name
	}
	log.Printf("deleted volume %s (%s, claim %s) and %s", name, pv.Status.Phase, claim, path)
	return nil
}
