package kubernetes

import (
	"net/http"
	"sync/atomic"
)

// CountRequests makes every client the backend makes from now on count its requests
// to the API server in n.
func CountRequests(k *Kubernetes, n *atomic.Int64) {
	k.wrap = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
