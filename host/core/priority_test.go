package core

import "testing"

func TestForegroundRunsAndRepanicsInTheCaller(t *testing.T) {
	ran := false
	Foreground(func() { ran = true })
	if !ran {
		t.Fatal("Foreground returned before f ran")
	}
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the panic of f", r)
		}
	}()
	Foreground(func() { panic("boom") })
	t.Fatal("Foreground returned after f panicked")
}
