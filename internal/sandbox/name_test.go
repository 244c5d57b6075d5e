package sandbox

import "testing"

func TestValidateName(t *testing.T) {
	for name, ok := range map[string]bool{
		"myrepo": true, "fix-auth_bug.2": true, "A1": true,
		"": false, "-x": false, ".x": false, "a..b": false, "a/b": false, "x.lock": false, "x.": false,
		"has space": false, "ünï": false, string(make([]byte, 64)): false,
	} {
		if err := ValidateName(name); (err == nil) != ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestNameFor(t *testing.T) {
	for in, want := range map[string]string{
		"myrepo":                       "myrepo",
		"/home/me/src/my repo":         "my-repo",
		"https://example.com/me/x.git": "x",
		"git@github.com:me/proj.git":   "proj",
		"file:///srv/served.git/":      "served",
		"...":                          "sandbox",
		"weird..name.lock":             "weird.name",
	} {
		got := NameFor(in)
		if got != want {
			t.Errorf("NameFor(%q) = %q, want %q", in, got, want)
		}
		if err := ValidateName(got); err != nil {
			t.Errorf("NameFor(%q) = %q, which is not valid: %v", in, got, err)
		}
	}
}
