package alarm

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Thresholds of the host-name detector (docs/security.md names them).
const (
	// LongLabel is the length from which a label of one encoding's alphabet (hex,
	// base32, base64url without its padding) with no word break, or of high entropy,
	// reads as data. The longest labels of ordinary hosts (CDN shards, buckets) are
	// shorter, or words joined by hyphens.
	LongLabel = 40
	// RandomLabel is the length from which a label of mixed letters and digits whose
	// characters are nearly all different (RandomEntropy bits each) reads as data.
	RandomLabel = 24
	// RandomEntropy is the Shannon entropy, in bits per character, from which a label of
	// RandomLabel characters or more reads as random.
	RandomEntropy = 4.0
	// ManyNames is how many distinct names under one parent domain in NamesWindow read
	// as data carried out one name at a time.
	ManyNames = 20
	// NamesWindow is the window ManyNames counts in.
	NamesWindow = time.Minute
	// maxParents and maxNames bound the detector's memory per sandbox.
	maxParents = 64
	maxNames   = ManyNames + 1
	// quiet is how long a parent that was flagged for many names is not flagged again.
	quiet = 10 * time.Minute
)

// Names watches the host names each sandbox asks the egress proxy for. It is safe for
// concurrent use; its memory is bounded per sandbox, and Forget drops a sandbox's.
type Names struct {
	mu  sync.Mutex
	sbs map[string]*nameWindow
}

type nameWindow struct {
	parents map[string]*parentNames
}

type parentNames struct {
	seen    map[string]time.Time // name: last seen
	last    time.Time
	flagged time.Time
}

// NewNames returns a detector with no history.
func NewNames() *Names { return &Names{sbs: map[string]*nameWindow{}} }

// Forget drops what n keeps of sandbox.
func (n *Names) Forget(sandbox string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.sbs, sandbox)
}

// Check reads host, which sandbox asked for at now: a label shaped like data (DataLabel),
// or the ManyNames-th distinct name under one parent within NamesWindow.
func (n *Names) Check(sandbox, host string, now time.Time) (Finding, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || !strings.Contains(host, ".") {
		return Finding{}, false
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return Finding{}, false
	}
	labels := strings.Split(host, ".")
	parent := parentOf(labels)
	for _, l := range labels[:len(labels)-len(strings.Split(parent, "."))] {
		if why := DataLabel(l); why != "" {
			return Finding{Kind: KindDNSData, Source: "egress", Detail: "host name carries data: " + clip(host, 260) + " (" + why + ")"}, true
		}
	}
	if host == parent {
		return Finding{}, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.sbs[sandbox]
	if w == nil {
		w = &nameWindow{parents: map[string]*parentNames{}}
		n.sbs[sandbox] = w
	}
	p := w.parents[parent]
	if p == nil {
		if len(w.parents) >= maxParents {
			w.evictOldest()
		}
		p = &parentNames{seen: map[string]time.Time{}}
		w.parents[parent] = p
	}
	p.last = now
	for name, at := range p.seen {
		if now.Sub(at) > NamesWindow {
			delete(p.seen, name)
		}
	}
	if _, ok := p.seen[host]; !ok && len(p.seen) >= maxNames {
		p.evictOldest()
	}
	p.seen[host] = now
	if len(p.seen) < ManyNames || (!p.flagged.IsZero() && now.Sub(p.flagged) < quiet) {
		return Finding{}, false
	}
	p.flagged = now
	return Finding{Kind: KindDNSData, Source: "egress", Detail: "host names carry data: " + itoa(len(p.seen)) + " distinct names under " + parent + " within a minute (the last " + clip(host, 200) + ")"}, true
}

func (w *nameWindow) evictOldest() {
	var oldest string
	for k, p := range w.parents {
		if oldest == "" || p.last.Before(w.parents[oldest].last) {
			oldest = k
		}
	}
	delete(w.parents, oldest)
}

func (p *parentNames) evictOldest() {
	var oldest string
	for k, at := range p.seen {
		if oldest == "" || at.Before(p.seen[oldest]) {
			oldest = k
		}
	}
	delete(p.seen, oldest)
}

// parentOf is the registrable part of a name, near enough: its last two labels, or three
// where the second-level label is a short public suffix's (co.uk, com.au).
func parentOf(labels []string) string {
	n := 2
	if len(labels) >= 3 && len(labels[len(labels)-1]) == 2 && len(labels[len(labels)-2]) <= 3 {
		n = 3
	}
	n = min(n, len(labels))
	return strings.Join(labels[len(labels)-n:], ".")
}

// DataLabel says why one label of a host name reads as data, or "" when it does not: at
// least LongLabel characters of hex, base32 or base64url with no hyphen, or at least
// RandomLabel characters mixing letters and digits with RandomEntropy bits a character.
func DataLabel(l string) string {
	hasDigit, hasLetter := false, false
	for _, r := range l {
		switch {
		case r >= '0' && r <= '9':
			hasDigit = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			hasLetter = true
		case r == '-' || r == '_':
		default:
			return "" // not a name's label at all; the proxy refuses it
		}
	}
	noBreak := !strings.ContainsAny(l, "-")
	switch {
	case len(l) >= LongLabel && noBreak && isHex(l):
		return "a " + itoa(len(l)) + "-character hex label"
	case len(l) >= LongLabel && noBreak && hasDigit:
		return "a " + itoa(len(l)) + "-character encoded label"
	case len(l) >= LongLabel && noBreak && entropy(l) >= RandomEntropy:
		return "a " + itoa(len(l)) + "-character random label"
	case len(l) >= RandomLabel && noBreak && hasDigit && hasLetter && entropy(l) >= RandomEntropy:
		return "a " + itoa(len(l)) + "-character random label"
	}
	return ""
}

func isHex(s string) bool {
	for _, r := range strings.ToLower(s) {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// entropy is the Shannon entropy of s's characters, in bits per character.
func entropy(s string) float64 {
	counts := map[rune]int{}
	for _, r := range strings.ToLower(s) {
		counts[r]++
	}
	var h float64
	for _, c := range counts {
		p := float64(c) / float64(len(s))
		h -= p * math.Log2(p)
	}
	return h
}

func itoa(n int) string { return strconv.Itoa(n) }
