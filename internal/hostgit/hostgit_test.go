package hostgit

import (
	"context"
	"testing"

	"github.com/paddockhq/paddock/internal/backend/conform"
)

// TestHostGit runs the checks as verify does and wants every one to pass.
func TestHostGit(t *testing.T) {
	results, err := conform.RunFunc(context.Background(), Suite, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		t.Logf("%s %s %s %v", r.Status, r.Name, r.Why, r.Notes)
		if r.Status != conform.Pass {
			t.Errorf("%s: %s: %s", r.Name, r.Status, r.Why)
		}
	}
}
