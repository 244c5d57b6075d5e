package microvm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cavaliergopher/cpio"

	"github.com/paddockhq/paddock/internal/atomicfile"
	"github.com/paddockhq/paddock/internal/vmspec"
)

// The guest's parts: the kernel (Debian's, from /boot, its compressed payload unpacked
// once into an ELF the monitors boot directly, which saves seconds of decompression
// under TCG), an initramfs of paddock's own (the guest binary as /init and the modules
// it loads), the image's root file system as ext4 (read-only, shared), and each
// sandbox's data disk.

// modules are the kernel modules init loads, by name; their dependencies come first,
// from the kernel's modules.dep.
var modules = []string{"virtio_mmio", "virtio_blk", "virtio_console", "crc32c_generic", "ext4", "overlay"}

// netModules are the network device's modules, which init loads only in a VM that has
// one (`--network open`).
var netModules = []string{"virtio_net"}

// vsockModules are the vsock device's modules, which init loads only in a VM whose
// channel is vsock (Firecracker's).
var vsockModules = []string{"vmw_vsock_virtio_transport"}

// initramfsFormat names what the initramfs holds; a change to it makes the cached
// initramfs files be written anew.
const initramfsFormat = "v3"

// kernel is a kernel release found on this machine.
type kernel struct {
	Release string // 6.1.0-28-amd64
	Image   string // its compressed image, /boot/vmlinuz-RELEASE
	Modules string // /lib/modules/RELEASE
}

// findKernel picks the kernel: the configured image, else the newest /boot/vmlinuz-*
// with its modules installed.
func findKernel(configured string) (kernel, error) {
	if configured != "" {
		rel := strings.TrimPrefix(filepath.Base(configured), "vmlinuz-")
		k := kernel{Release: rel, Image: configured, Modules: filepath.Join("/lib/modules", rel)}
		if _, err := os.Stat(k.Image); err != nil {
			return k, fmt.Errorf("the kernel %s: %w", configured, err)
		}
		if _, err := os.Stat(filepath.Join(k.Modules, "modules.dep")); err != nil {
			return k, fmt.Errorf("the kernel %s has no modules in %s", configured, k.Modules)
		}
		return k, nil
	}
	images, _ := filepath.Glob("/boot/vmlinuz-*")
	sort.Sort(sort.Reverse(sort.StringSlice(images)))
	for _, img := range images {
		rel := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
		dir := filepath.Join("/lib/modules", rel)
		if _, err := os.Stat(filepath.Join(dir, "modules.dep")); err == nil {
			return kernel{Release: rel, Image: img, Modules: dir}, nil
		}
	}
	return kernel{}, errors.New("no kernel in /boot (vmlinuz-*) with its modules in /lib/modules")
}

// unpackKernel writes the ELF kernel inside a bzImage (its xz payload) to dst.
func unpackKernel(image, dst string) error {
	data, err := os.ReadFile(image)
	if err != nil {
		return err
	}
	i := bytes.Index(data, []byte{0xfd, '7', 'z', 'X', 'Z', 0})
	if i < 0 {
		return fmt.Errorf("the kernel %s holds no xz payload (paddock boots xz-compressed kernels, as Debian's are)", image)
	}
	// Go's xz readers know no BCJ filter, which kernels are packed with: xz-utils
	// unpacks it. --single-stream ignores the bzImage's trailer after the payload.
	var out, stderr bytes.Buffer
	xzCmd := exec.Command("xz", "-d", "-c", "--single-stream")
	xzCmd.Stdin, xzCmd.Stdout, xzCmd.Stderr = bytes.NewReader(data[i:]), &out, &stderr
	if err := xzCmd.Run(); err != nil {
		return fmt.Errorf("unpack the kernel %s with xz: %v: %s (sudo apt-get install xz-utils)", image, err, strings.TrimSpace(stderr.String()))
	}
	if !bytes.HasPrefix(out.Bytes(), []byte("\x7fELF")) {
		return fmt.Errorf("the kernel %s did not unpack to an ELF image", image)
	}
	return atomicfile.Write(dst, out.Bytes(), 0o644)
}

// moduleOrder lists the module files (paths under dir) to load for names, each after
// the modules it depends on, from dir/modules.dep.
func moduleOrder(dir string, names []string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	deps := map[string][]string{} // module path: paths it needs
	byName := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		deps[mod] = strings.Fields(rest)
		byName[moduleName(mod)] = mod
	}
	var order []string
	seen := map[string]bool{}
	var visit func(string)
	visit = func(mod string) {
		if seen[mod] {
			return
		}
		seen[mod] = true
		for _, d := range deps[mod] {
			visit(d)
		}
		order = append(order, mod)
	}
	for _, n := range names {
		mod, ok := byName[n]
		if !ok {
			if builtin(dir, n) {
				continue
			}
			return nil, fmt.Errorf("the kernel in %s has no module %s", dir, n)
		}
		visit(mod)
	}
	return order, nil
}

// builtin says whether the kernel has a module built in.
func builtin(dir, name string) bool {
	data, _ := os.ReadFile(filepath.Join(dir, "modules.builtin"))
	for _, l := range strings.Fields(string(data)) {
		if moduleName(l) == name {
			return true
		}
	}
	return false
}

// moduleName is a module file's name as modprobe spells it.
func moduleName(path string) string {
	base := filepath.Base(path)
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		base = strings.TrimSuffix(base, ext)
	}
	return strings.ReplaceAll(strings.TrimSuffix(base, ".ko"), "-", "_")
}

// writeInitramfs writes a newc cpio archive: guest as /init, the modules (in the
// order to load them) and their list, and the directories init mounts on.
func writeInitramfs(dst, guest string, k kernel) error {
	mods, err := moduleOrder(k.Modules, modules)
	if err != nil {
		return err
	}
	// The network's and vsock's modules: those the disks' modules do not already load.
	extra := func(names []string) ([]string, error) {
		all, err := moduleOrder(k.Modules, names)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, m := range all {
			if !slices.Contains(mods, m) {
				out = append(out, m)
			}
		}
		return out, nil
	}
	netMods, err := extra(netModules)
	if err != nil {
		return err
	}
	vsockMods, err := extra(vsockModules)
	if err != nil {
		return err
	}
	for _, m := range slices.Concat(mods, netMods, vsockMods) {
		if strings.HasSuffix(m, ".xz") || strings.HasSuffix(m, ".zst") || strings.HasSuffix(m, ".gz") {
			return fmt.Errorf("the kernel's module %s is compressed: paddock loads uncompressed modules (Debian 12's kernels)", m)
		}
	}
	var buf bytes.Buffer
	w := cpio.NewWriter(&buf)
	ino := int64(1)
	add := func(name string, mode cpio.FileMode, data []byte) error {
		ino++
		if err := w.WriteHeader(&cpio.Header{Name: name, Mode: mode, Size: int64(len(data)), Links: 1, Inode: ino}); err != nil {
			return err
		}
		_, err := w.Write(data)
		return err
	}
	for _, d := range []string{"dev", "proc", "sys", "lib", "lib/modules", "newroot", "lower", "data"} {
		if err := add(d, cpio.TypeDir|0o755, nil); err != nil {
			return err
		}
	}
	bin, err := os.ReadFile(guest)
	if err != nil {
		return fmt.Errorf("the guest binary: %w", err)
	}
	if err := add("init", cpio.TypeReg|0o755, bin); err != nil {
		return err
	}
	addList := func(listPath string, mods []string) error {
		var list []string
		for _, m := range mods {
			data, err := os.ReadFile(filepath.Join(k.Modules, m))
			if err != nil {
				return err
			}
			name := "lib/modules/" + filepath.Base(m)
			if err := add(name, cpio.TypeReg|0o644, data); err != nil {
				return err
			}
			list = append(list, "/"+name)
		}
		return add(strings.TrimPrefix(listPath, "/"), cpio.TypeReg|0o644, []byte(strings.Join(list, "\n")+"\n"))
	}
	if err := addList(vmspec.ModuleList, mods); err != nil {
		return err
	}
	if err := addList(vmspec.NetModuleList, netMods); err != nil {
		return err
	}
	if err := addList(vmspec.VsockModuleList, vsockMods); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return atomicfile.Write(dst, buf.Bytes(), 0o644)
}

// mkfs makes an ext4 file system of size bytes in the (sparse) file dst, filled from
// the directory src (none when empty), as mke2fs does it: without root or a loop
// device.
func mkfs(ctx context.Context, dst, label, src string, size int64) error {
	// Another paddock (the daemon, verify) may build the same image into a shared cache.
	tmp := fmt.Sprintf("%s.%d.tmp", dst, os.Getpid())
	os.Remove(tmp)
	args := []string{"-q", "-F", "-t", "ext4", "-L", label, "-E", "root_owner=0:0,lazy_itable_init=1,lazy_journal_init=1", "-m", "0"}
	if src != "" {
		args = append(args, "-d", src)
	}
	args = append(args, tmp, fmt.Sprintf("%dk", size>>10))
	out, err := exec.CommandContext(ctx, mke2fs(), args...).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mke2fs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return os.Rename(tmp, dst)
}

// mke2fs is e2fsprogs' mke2fs, which Debian keeps in /sbin (not on a user's PATH).
func mke2fs() string {
	if p, err := exec.LookPath("mke2fs"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/mke2fs", "/sbin/mke2fs"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "mke2fs"
}

// dirSize is the bytes the files under dir take.
func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}
