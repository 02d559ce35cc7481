package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// The trace report answers "what did the slowest requests wait on": for the
// slowest "request" regions of a -trace file it splits each request's time
// into the proxy's steps (its metaclaw.* regions), how long the request's
// own goroutines ran, were runnable but not running (waiting for a P), or
// blocked (and on what), and what else ran on the Ps meanwhile (learning,
// the garbage collector, the checkpointer, the recorder).

// span is a window's bounds, for overlapping.
type span interface {
	bounds() (start, end xtrace.Time)
}

// overlapping returns the windows of ws (sorted by start, not
// overlapping) that [a, b) overlaps.
func overlapping[W span](ws []W, a, b xtrace.Time) []W {
	i := sort.Search(len(ws), func(i int) bool { _, end := ws[i].bounds(); return end > a })
	j := i
	for j < len(ws) {
		if start, _ := ws[j].bounds(); start >= b {
			break
		}
		j++
	}
	return ws[i:j]
}

// window is one "request" region and what happened during it.
type window struct {
	start, end xtrace.Time
	steps      map[string]time.Duration // metaclaw.* regions inside it
	// states: per goroutine class, per state ("running", "runnable",
	// "blocked: <reason>", "syscall"), the time spent in the window.
	states map[string]map[string]time.Duration
	gcMark time.Duration // the window's overlap with the GC's mark phase
}

func (w *window) dur() time.Duration { return w.end.Sub(w.start) }

// overlap is how much of [a, b) lies inside w.
func (w *window) overlap(a, b xtrace.Time) time.Duration {
	a, b = max(a, w.start), min(b, w.end)
	if b <= a {
		return 0
	}
	return b.Sub(a)
}

// requestPath are the goroutine classes that serve a request; the others
// only compete with it for the Ps.
var requestPath = []string{"client", "proxy handler", "context provider", "proxy transport", "http conn", "upstream"}

// classify names what a goroutine is for from its entry function (root:
// the function it was started with) and the functions on its stacks. A
// rule with onRoot matches the entry alone: a frame that any goroutine
// may have on its stack does not say what the goroutine is for (every
// goroutine that runs a query has modernc.org/sqlite.interruptOnDone on
// its stack while that query's watcher runs, and the proxy's handler and
// the recorder call into host/memory). The first rule that matches wins.
func classify(root string, funcs []string) string {
	rules := []struct {
		class, substr string
		onRoot        bool
	}{
		{"GC worker", "runtime.gcBgMarkWorker", true},
		{"GC worker", "runtime.bgsweep", true},
		{"GC worker", "runtime.bgscavenge", true},
		// A query's context watchers: database/sql's for a Rows or a
		// Tx, modernc's to interrupt SQLite when the context ends.
		{"sql watcher", "database/sql.(*Rows).awaitDone", true},
		{"sql watcher", "database/sql.(*Tx).awaitDone", true},
		{"sql watcher", "modernc.org/sqlite.interruptOnDone.func", true},
		{"checkpointer", "host/store.(*SQLite).checkpoint", true},
		{"checkpointer", "host/store.checkpoint", true},
		{"recorder", "host/core.(*recorder)", true},
		{"context provider", "host/core.(*Core).start.func", true},
		{"context provider", "host/core.(*Core).ask", true},
		{"client", "main.runLoaded", false},
		{"upstream", "internal/fakellm.", false},
		{"proxy handler", "host/proxy.", false},
		// The recorder's commits on their background thread (before
		// GoBackground's rule below: it is not learning).
		{"recorder", "host/core.(*recorder).persist", false},
		{"learning", "host/core.(*Core).GoBackground", false},
		{"learning", "host/memory.", false},
		{"learning", "host/core.(*Core).runJob", false},
		{"learning", "host/core.(*jobs)", false},
		{"proxy transport", "net/http.(*persistConn)", false},
		{"http conn", "net/http.(*connReader).backgroundRead", false},
		{"proxy handler", "net/http.(*conn).serve", false}, // a server's goroutine: not the upstream's (above)
	}
	for _, r := range rules {
		if r.onRoot {
			if strings.Contains(root, r.substr) {
				return r.class
			}
			continue
		}
		for _, f := range funcs {
			if strings.Contains(f, r.substr) {
				return r.class
			}
		}
	}
	return "other"
}

// goroutine is what the report tracks of one goroutine.
type goroutine struct {
	funcs       []string // distinct functions seen on its stacks
	root        string   // its entry function: see setRoot
	rootDepth   int
	creator     []string // the functions of the stack that created it
	creatorRoot string
	state       string
	since       xtrace.Time
	stack       string     // where it blocked: the project's and database/sql's frames
	intervals   []interval // its state intervals that touch a window
}

// see notes a stack of the goroutine: its distinct functions (at most 512)
// and, through setRoot, its entry function.
func (g *goroutine) see(s xtrace.Stack) {
	for f := range s.Frames() {
		if !slices.Contains(g.funcs, f.Func) && len(g.funcs) < 512 {
			g.funcs = append(g.funcs, f.Func)
		}
	}
	g.setRoot(s)
}

// setRoot keeps the outermost frame of the shallowest stack seen as the
// goroutine's entry function: its creation stack is that function alone,
// and a deep stack may be cut short of it.
func (g *goroutine) setRoot(s xtrace.Stack) {
	n, root := 0, ""
	for f := range s.Frames() {
		n++
		root = f.Func
	}
	if n > 0 && (g.root == "" || n < g.rootDepth) {
		g.root, g.rootDepth = root, n
	}
}

func (w *window) bounds() (xtrace.Time, xtrace.Time) { return w.start, w.end }

// rootOf is the outermost frame of a stack.
func rootOf(s xtrace.Stack) string {
	root := ""
	for f := range s.Frames() {
		root = f.Func
	}
	return root
}

type interval struct {
	a, b  xtrace.Time
	state string
	stack string
}

// traceReport prints the report of the n slowest requests of the trace at
// path, and the same figures for n requests around the median, to compare.
func traceReport(out io.Writer, path string, n int) error {
	reqs, err := requestWindows(path)
	if err != nil {
		return err
	}
	if len(reqs) == 0 {
		return fmt.Errorf("trace report: %s has no \"request\" region (write it with proxybench -trace)", path)
	}
	sorted := slices.Clone(reqs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].dur() > sorted[j].dur() })
	n = min(n, len(sorted)/2)
	slow := sorted[:n]
	mid := sorted[len(sorted)/2-n/2 : len(sorted)/2-n/2+n]
	chosen := append(slices.Clone(slow), mid...)
	sort.Slice(chosen, func(i, j int) bool { return chosen[i].start < chosen[j].start })
	waits, err := fillWindows(path, chosen)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "trace report: %d requests; the %d slowest, then %d around the median (ms)\n\n", len(reqs), len(slow), len(mid))
	printWindows(out, slow)
	fmt.Fprintln(out)
	printRecorder(out, slow)
	for _, w := range waits {
		fmt.Fprintf(out, "%s %s for %s in%s\n", w.class, w.state, f(w.b.Sub(w.a)), strings.ReplaceAll(w.stack, "github.com/metaclaw-go/metaclaw/", ""))
	}
	fmt.Fprintln(out)
	printSummary(out, "slowest", slow)
	printSummary(out, "median", mid)
	return nil
}

// requestWindows reads the "request" regions (first pass).
func requestWindows(path string) ([]*window, error) {
	var out []*window
	open := map[xtrace.GoID]xtrace.Time{}
	err := readTrace(path, func(e xtrace.Event) {
		switch e.Kind() {
		case xtrace.EventRegionBegin:
			if e.Region().Type == "request" {
				open[e.Goroutine()] = e.Time()
			}
		case xtrace.EventRegionEnd:
			if e.Region().Type == "request" {
				if t, ok := open[e.Goroutine()]; ok {
					out = append(out, &window{start: t, end: e.Time(), steps: map[string]time.Duration{}, states: map[string]map[string]time.Duration{}})
					delete(open, e.Goroutine())
				}
			}
		}
	})
	return out, err
}

// fillWindows accounts the trace's regions, goroutine states and GC phases
// to the windows (sorted by start, not overlapping: requests are sequential).
func fillWindows(path string, ws []*window) ([]longWait, error) {
	var waits []longWait
	find := func(t xtrace.Time) *window {
		i := sort.Search(len(ws), func(i int) bool { return ws[i].end > t })
		if i < len(ws) && ws[i].start <= t {
			return ws[i]
		}
		return nil
	}
	gs := map[xtrace.GoID]*goroutine{}
	get := func(id xtrace.GoID) *goroutine {
		g := gs[id]
		if g == nil {
			g = &goroutine{}
			gs[id] = g
		}
		return g
	}
	regionStart := map[xtrace.GoID]map[string]xtrace.Time{}
	var markStart xtrace.Time
	err := readTrace(path, func(e xtrace.Event) {
		if id := e.Goroutine(); id != xtrace.NoGoroutine {
			get(id).see(e.Stack())
		}
		switch e.Kind() {
		case xtrace.EventStateTransition:
			st := e.StateTransition()
			if st.Resource.Kind != xtrace.ResourceGoroutine {
				return
			}
			g := get(st.Resource.Goroutine())
			g.see(st.Stack)
			if g.state != "" {
				if len(overlapping(ws, g.since, e.Time())) > 0 {
					g.intervals = append(g.intervals, interval{g.since, e.Time(), g.state, g.stack})
				}
			}
			from, to := st.Goroutine()
			if from == xtrace.GoNotExist && e.Goroutine() != xtrace.NoGoroutine {
				for fr := range e.Stack().Frames() {
					g.creator = append(g.creator, fr.Func)
				}
				g.creatorRoot = rootOf(e.Stack())
			}
			g.state, g.since = stateName(to, st.Reason), e.Time()
			g.stack = ""
			if to == xtrace.GoWaiting {
				for fr := range e.Stack().Frames() {
					if strings.Contains(fr.Func, "metaclaw") || strings.Contains(fr.Func, "database/sql") {
						g.stack += " " + fr.Func
					}
				}
			}
		case xtrace.EventRegionBegin:
			name := e.Region().Type
			if strings.HasPrefix(name, "metaclaw.") {
				if regionStart[e.Goroutine()] == nil {
					regionStart[e.Goroutine()] = map[string]xtrace.Time{}
				}
				regionStart[e.Goroutine()][name] = e.Time()
			}
		case xtrace.EventRegionEnd:
			name := e.Region().Type
			if t, ok := regionStart[e.Goroutine()][name]; ok {
				if w := find(t); w != nil {
					w.steps[strings.TrimPrefix(name, "metaclaw.")] += e.Time().Sub(t)
				}
				delete(regionStart[e.Goroutine()], name)
			}
		case xtrace.EventRangeBegin:
			if e.Range().Name == "GC concurrent mark phase" {
				markStart = e.Time()
			}
		case xtrace.EventRangeEnd:
			if e.Range().Name == "GC concurrent mark phase" && markStart != 0 {
				for _, w := range overlapping(ws, markStart, e.Time()) {
					w.gcMark += w.overlap(markStart, e.Time())
				}
				markStart = 0
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		class := classify(g.root, g.funcs)
		if class == "other" && len(g.creator) > 0 {
			// Helpers (a handler's goroutine aside) work for their creator.
			class = classify(g.creatorRoot, g.creator)
		}
		if class == "recorder" || slices.Contains(requestPath, class) {
			for _, iv := range g.intervals {
				if iv.b.Sub(iv.a) >= time.Millisecond && contended(iv) && len(overlapping(ws, iv.a, iv.b)) > 0 {
					waits = append(waits, longWait{class, iv})
				}
			}
		}
		// Only goroutines that ran during a window count for it: the
		// idle ones (pooled connections' loops) are blocked throughout.
		ran := map[*window]bool{}
		for _, iv := range g.intervals {
			if iv.state == "running" {
				for _, w := range overlapping(ws, iv.a, iv.b) {
					ran[w] = true
				}
			}
		}
		for _, iv := range g.intervals {
			for _, w := range overlapping(ws, iv.a, iv.b) {
				if !ran[w] {
					continue
				}
				if w.states[class] == nil {
					w.states[class] = map[string]time.Duration{}
				}
				w.states[class][iv.state] += w.overlap(iv.a, iv.b)
			}
		}
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i].a < waits[j].a })
	return waits, nil
}

// longWait is a wait of 1 ms or more of the request path or the recorder
// inside a chosen request, on something other than the next request.
type longWait struct {
	class string
	interval
}

// contended reports whether a wait is on a shared resource (a lock, the
// store's writer connection, SQLite's busy sleep), not idle.
func contended(iv interval) bool {
	switch {
	case !strings.HasPrefix(iv.state, "blocked"):
		return false
	case strings.Contains(iv.stack, "database/sql"), strings.Contains(iv.state, "sync"), strings.Contains(iv.state, "sleep"):
		return true
	}
	return false
}

func stateName(s xtrace.GoState, reason string) string {
	switch s {
	case xtrace.GoRunning:
		return "running"
	case xtrace.GoRunnable:
		return "runnable"
	case xtrace.GoSyscall:
		return "syscall"
	case xtrace.GoWaiting:
		if reason == "" {
			reason = "?"
		}
		return "blocked: " + reason
	}
	return "" // not existing: not accounted
}

func readTrace(path string, each func(xtrace.Event)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("trace report: %w", err)
	}
	defer f.Close()
	r, err := xtrace.NewReader(f)
	if err != nil {
		return fmt.Errorf("trace report: reading %s: %w", path, err)
	}
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("trace report: reading %s: %w", path, err)
		}
		each(e)
	}
}

// pathState sums a state over the request path's goroutine classes.
func (w *window) pathState(match func(string) bool) time.Duration {
	var d time.Duration
	for _, c := range requestPath {
		for s, v := range w.states[c] {
			if match(s) {
				d += v
			}
		}
	}
	return d
}

// others is what each other class ran during the window.
func (w *window) others(class string) time.Duration {
	return w.states[class]["running"]
}

var otherClasses = []string{"learning", "GC worker", "checkpointer", "recorder", "sql watcher", "other"}

func printWindows(out io.Writer, ws []*window) {
	fmt.Fprintln(out, "| request | slowest step | path runnable | path blocked (top reason) | path syscall | beside it, running: learning | GC worker | checkpointer | recorder | sql watcher | other | GC mark phase |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, w := range ws {
		step, sd := "", time.Duration(0)
		for s, d := range w.steps {
			if d > sd {
				step, sd = s, d
			}
		}
		blocked := map[string]time.Duration{}
		for _, c := range requestPath {
			for s, v := range w.states[c] {
				if r, ok := strings.CutPrefix(s, "blocked: "); ok {
					blocked[c+" "+r] += v
				}
			}
		}
		top, td := "", time.Duration(0)
		for r, d := range blocked {
			if d > td {
				top, td = r, d
			}
		}
		fmt.Fprintf(out, "| %s | %s %s | %s | %s (%s) | %s |", f(w.dur()), step, f(sd),
			f(w.pathState(func(s string) bool { return s == "runnable" })), f(td), top,
			f(w.pathState(func(s string) bool { return s == "syscall" })))
		for _, c := range otherClasses {
			fmt.Fprintf(out, " %s |", f(w.others(c)))
		}
		fmt.Fprintf(out, " %s |\n", f(w.gcMark))
	}
}

// printSummary prints the mean of each figure over the windows.
func printSummary(out io.Writer, label string, ws []*window) {
	n := time.Duration(len(ws))
	var dur, run, runnable, sys, gc time.Duration
	steps := map[string]time.Duration{}
	other := map[string]time.Duration{}
	for _, w := range ws {
		dur += w.dur()
		run += w.pathState(func(s string) bool { return s == "running" })
		runnable += w.pathState(func(s string) bool { return s == "runnable" })
		sys += w.pathState(func(s string) bool { return s == "syscall" })
		gc += w.gcMark
		for s, d := range w.steps {
			steps[s] += d
		}
		for _, c := range otherClasses {
			other[c] += w.others(c)
		}
	}
	var st []string
	for s, d := range steps {
		st = append(st, fmt.Sprintf("%s %s", s, f(d/n)))
	}
	sort.Strings(st)
	var ot []string
	for _, c := range otherClasses {
		ot = append(ot, fmt.Sprintf("%s %s", c, f(other[c]/n)))
	}
	fmt.Fprintf(out, "%s %d, mean: request %s; steps: %s; request path running %s, runnable %s, syscall %s; beside it running: %s; GC mark phase %s\n",
		label, len(ws), f(dur/n), strings.Join(st, ", "), f(run/n), f(runnable/n), f(sys/n), strings.Join(ot, ", "), f(gc/n))
}

// printRecorder shows, for the slow requests whose longest step is waiting
// for their turn to be recorded, what the recorder's goroutine did: a turn
// waits for the store's single writer connection while learning's
// transaction holds it.
func printRecorder(out io.Writer, ws []*window) {
	for _, w := range ws {
		if w.steps["record"] < time.Millisecond {
			continue
		}
		var st []string
		for s, d := range w.states["recorder"] {
			st = append(st, fmt.Sprintf("%s %s", s, f(d)))
		}
		sort.Strings(st)
		fmt.Fprintf(out, "request %s waited %s for its turn to be recorded; the recorder meanwhile: %s; learning ran %s\n",
			f(w.dur()), f(w.steps["record"]), strings.Join(st, ", "), f(w.others("learning")))
	}
}
