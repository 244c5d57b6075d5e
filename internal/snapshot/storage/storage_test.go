package storage

import (
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	t.Parallel()
	for _, k := range []string{
		"k", "snapshots/web/01J9Z.json", "blobs/sha256/ab/" + strings.Repeat("ab", 32), "a.b_c-d/e..f", strings.Repeat("k", MaxKeyLen),
	} {
		if err := CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range badKeys {
		if err := CheckKey(k); err == nil {
			t.Errorf("CheckKey(%q) = nil, want a refusal", k)
		}
	}
}

func TestBlobKey(t *testing.T) {
	t.Parallel()
	sha := sum("x")
	for _, tc := range []struct{ sha, want string }{
		{sha, "blobs/sha256/" + sha[:2] + "/" + sha},
		{strings.ToUpper(sha), ""},
		{sha[:63], ""},
		{sha + "0", ""},
		{"../../../../../../../../../../../../../../../../../../../../../etc", ""},
		{"", ""},
	} {
		got := BlobKey(tc.sha)
		if got != tc.want {
			t.Errorf("BlobKey(%q) = %q, want %q", tc.sha, got, tc.want)
		}
		if (CheckSHA256(tc.sha) == nil) != (tc.want != "") {
			t.Errorf("CheckSHA256(%q) disagrees with BlobKey", tc.sha)
		}
		if got != "" && CheckKey(got) != nil {
			t.Errorf("BlobKey(%q) = %q, which CheckKey refuses", tc.sha, got)
		}
	}
}
