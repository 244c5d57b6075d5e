package backend

import "testing"

func TestRegistryRefusesDuplicates(t *testing.T) {
	f := func(Env) (Backend, error) { return nil, nil }
	Register("test-dup", Description{}, f)
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration under one name did not panic")
		}
		mu.Lock()
		delete(registry, "test-dup")
		mu.Unlock()
	}()
	Register("test-dup", Description{}, f)
}

func TestNewUnknown(t *testing.T) {
	if _, err := New("no-such-backend", Env{}); err == nil {
		t.Fatal("New of an unknown backend succeeded")
	}
}
