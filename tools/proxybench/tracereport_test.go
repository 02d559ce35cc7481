package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTraceReport traces sequential requests (runLoaded's "request"
// regions) to a server whose every fifth answer waits for a mutex another
// goroutine holds, and checks that the report finds those requests, the step
// they were slow in, and the wait.
func TestTraceReport(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r1 := trace.StartRegion(r.Context(), "metaclaw.request.parse")
		n++
		slow := n%5 == 0
		r1.End()
		defer trace.StartRegion(r.Context(), "metaclaw.upstream").End()
		if slow {
			held := make(chan struct{})
			go func() {
				mu.Lock()
				close(held)
				time.Sleep(3 * time.Millisecond)
				mu.Unlock()
			}()
			<-held
			mu.Lock() // blocks until the holder lets go
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[]}`))
	}))
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "trace.out")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		t.Fatal(err)
	}
	bodies := make([]string, 20)
	for i := range bodies {
		bodies[i] = body
	}
	runLoaded(srv.Client(), srv.URL, bodies, 1)
	trace.Stop()
	f.Close()

	var out bytes.Buffer
	if err := traceReport(&out, path, 4); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"trace report: 20 requests; the 4 slowest, then 4 around the median",
		"| upstream ",                      // the slow requests' slowest step
		"proxy handler blocked: sync for ", // the mutex wait, listed
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	// The four slowest rows are the four requests that waited.
	rows := strings.Split(got, "\n")[4:8]
	for _, r := range rows {
		if !strings.Contains(r, "| upstream ") {
			t.Errorf("slow row without the upstream step: %s", r)
		}
	}
}

func TestTraceReportErrors(t *testing.T) {
	var out bytes.Buffer
	if err := traceReport(&out, filepath.Join(t.TempDir(), "missing"), 30); err == nil || !strings.Contains(err.Error(), "trace report") {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "not-a-trace")
	os.WriteFile(empty, []byte("hello"), 0o600)
	if err := traceReport(&out, empty, 30); err == nil || !strings.Contains(err.Error(), "reading") {
		t.Errorf("not a trace: %v", err)
	}
}
