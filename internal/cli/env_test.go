package cli

import "testing"

func TestIsDotenv(t *testing.T) {
	for name, want := range map[string]bool{
		".env": true, ".env.local": true, ".env.production": true,
		".envrc": false, ".env-backup": false, ".environment": false, "env": false, "x.env": false,
	} {
		if got := isDotenv(name); got != want {
			t.Errorf("isDotenv(%q) = %v, want %v", name, got, want)
		}
	}
}
