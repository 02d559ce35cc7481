package hashembed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestVectors(t *testing.T) {
	e := New(0)
	if e.Dimensions() != DefaultDims || e.Name() != "hashing-ngram-v1-384" {
		t.Fatalf("%d %s", e.Dimensions(), e.Name())
	}
	if New(3).Dimensions() != MinDims {
		t.Error("dims not clamped")
	}
	v := e.Vector("The quick brown fox")
	if math.Abs(dot(v, v)-1) > 1e-6 {
		t.Errorf("norm² %v", dot(v, v))
	}
	for _, empty := range []string{"", "  ", "!!! ??? ..."} {
		if z := e.Vector(empty); dot(z, z) != 0 {
			t.Errorf("%q: not the zero vector", empty)
		}
	}
	// Case and punctuation do not matter; word order barely does.
	if s := dot(e.Vector("Hello, World!"), e.Vector("hello world")); s < 0.9999 {
		t.Errorf("case/punctuation: %v", s)
	}
	// Pinned values: the algorithm is part of the stored data's identity.
	// If this changes, change Algorithm too.
	h := sha256.New()
	for _, x := range v {
		_ = binary.Write(h, binary.LittleEndian, math.Float32bits(x))
	}
	got := fmt.Sprintf("%x", h.Sum(nil)[:8])
	t.Logf("pinned: %s", got)
	if pinned := pinnedQuickBrownFox; got != pinned {
		t.Errorf("vector changed: %s, pinned %s; bump Algorithm", got, pinned)
	}
}

func TestDeterministic(t *testing.T) {
	e := New(128)
	texts := []string{"alpha beta gamma", "deploy to staging", "alpha beta gamma"}
	a, _ := e.Embed(context.Background(), texts)
	for i := 0; i < 20; i++ {
		b, _ := e.Embed(context.Background(), texts)
		for j := range a {
			for k := range a[j] {
				if math.Float32bits(a[j][k]) != math.Float32bits(b[j][k]) {
					t.Fatalf("run %d text %d differs", i, j)
				}
			}
		}
	}
	for k := range a[0] {
		if a[0][k] != a[2][k] {
			t.Fatal("same text in one batch differs")
		}
	}
}

func TestSimilarity(t *testing.T) {
	e := New(0)
	cases := []struct{ q, near, far string }{
		{"how to deploy the service", "deploying a service to production", "chocolate cake recipe"},
		{"user prefers dark mode in the editor", "the editor should use a dark theme, user preference", "quarterly tax filing deadline"},
		{"fix the failing unit tests", "unit test failures fixed", "book a flight to Lisbon"},
	}
	for _, c := range cases {
		q := e.Vector(c.q)
		n, f := dot(q, e.Vector(c.near)), dot(q, e.Vector(c.far))
		if n <= f+0.15 {
			t.Errorf("%q: near %.3f far %.3f", c.q, n, f)
		}
		t.Logf("%q: near %.3f, far %.3f", c.q, n, f)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(0).Embed(ctx, []string{"x"}); err == nil {
		t.Error("no error on a cancelled context")
	}
}

func BenchmarkVector(b *testing.B) {
	e := New(0)
	text := "The user prefers concise answers, deploys with make release, and keeps notes in ~/notes/daily.md"
	b.ReportAllocs()
	for b.Loop() {
		e.Vector(text)
	}
}

const pinnedQuickBrownFox = "4beda2b299faa60c"
