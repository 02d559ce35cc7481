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
	path := tracedSlowRun(t, 20, 3*time.Millisecond, true)
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

// TestClassify uses stacks seen in a loaded run's trace: a frame any
// goroutine may have on its stack (the query watcher's creator, memory's
// retrieval) must not decide its class; its entry function does.
func TestClassify(t *testing.T) {
	const mc = "github.com/metaclaw-go/metaclaw/"
	query := []string{"modernc.org/sqlite.interruptOnDone", "modernc.org/sqlite.(*stmt).query", "database/sql.(*DB).QueryContext"}
	for _, tc := range []struct {
		name, root string
		funcs      []string
		want       string
	}{
		{"the proxy's handler running a query and memory's retrieval", "net/http.(*conn).serve",
			append([]string{mc + "host/proxy.(*phase).to", mc + "host/memory.meta"}, query...), "proxy handler"},
		{"modernc's interrupt goroutine", "modernc.org/sqlite.interruptOnDone.func1",
			[]string{"modernc.org/sqlite.interruptOnDone.func1", "runtime.selectgo"}, "sql watcher"},
		{"database/sql's Rows watcher", "database/sql.(*Rows).awaitDone", []string{"database/sql.(*Rows).awaitDone"}, "sql watcher"},
		{"the checkpointer running a query", mc + "host/store.(*SQLite).checkpointer.func1",
			append([]string{mc + "host/store.(*SQLite).checkpointer.func1"}, query...), "checkpointer"},
		{"the recorder, whose turns reach memory's hooks", mc + "host/core.(*recorder).loop",
			[]string{mc + "host/core.(*recorder).loop", mc + "host/memory.(*Ingester).OnTurn", mc + "host/core.(*jobs).enqueue"}, "recorder"},
		{"a context provider running memory's retrieval", mc + "host/core.(*Core).start.func1",
			[]string{mc + "host/core.(*Core).start.func1", mc + "host/memory.(*Provider).Context"}, "context provider"},
		{"a niced job worker", mc + "host/core.(*Core).GoBackground.func1",
			append([]string{mc + "host/memory.(*Store).Ingest", mc + "host/core.(*jobs).work"}, query...), "learning"},
		{"memory's index poller", mc + "host/memory.(*Store).pollIndex", append([]string{mc + "host/memory.meta"}, query...), "learning"},
		{"the fake upstream", "net/http.(*conn).serve", []string{"github.com/metaclaw-go/metaclaw/internal/fakellm.(*Server).openai"}, "upstream"},
		{"the bare proxy's handler", "net/http.(*conn).serve", []string{"net/http/httputil.(*ReverseProxy).ServeHTTP", "net/http.(*conn).serve"}, "proxy handler"},
		{"a GC mark worker", "runtime.gcBgMarkWorker", []string{"runtime.gcBgMarkWorker"}, "GC worker"},
		{"the tracer's own goroutine", "runtime.(*traceAdvancerState).start.func1", nil, "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.root, tc.funcs); got != tc.want {
				t.Errorf("classify(%q, %q) = %q, want %q", tc.root, tc.funcs, got, tc.want)
			}
		})
	}
}

// tracedSlowRun traces n sequential requests (runLoaded's "request"
// regions) to a server whose every fifth answer waits for a mutex another
// goroutine holds while it sleeps for hold, and returns the trace's path.
// With regions, the handler marks its steps as the proxy's does (parse,
// then upstream, the wait inside it).
func tracedSlowRun(t *testing.T, n int, hold time.Duration, regions bool) string {
	t.Helper()
	var mu sync.Mutex
	count := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if regions {
			r1 := trace.StartRegion(r.Context(), "metaclaw.request.parse")
			r1.End()
			defer trace.StartRegion(r.Context(), "metaclaw.upstream").End()
		}
		count++
		if count%5 == 0 {
			held := make(chan struct{})
			go func() {
				mu.Lock()
				close(held)
				time.Sleep(hold)
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
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = body
	}
	runLoaded(srv.Client(), srv.URL, bodies, 1, nil)
	trace.Stop()
	f.Close()
	return path
}
