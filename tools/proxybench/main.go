// Command proxybench measures what the MetaClaw proxy adds to a request,
// beside a bare httputil.ReverseProxy, in the same run and against the same
// fast local fake upstream: latency p50/p99 and throughput at concurrency 1
// and 32, and streaming time to first byte, with an empty library; then the
// same three targets with a learned state loaded (10,000 memories and 1,000
// skills by default) on sequential agent-shaped requests. With -processes
// it runs the loaded scenario alone, with the bare proxy and the loaded host
// each in a child process (processes.go). `make bench` runs it both ways.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

const body = `{"model":"m","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one word."}]}`
const streamBody = `{"model":"m","stream":true,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one word."}]}`

// largeBody is shaped like a real agent turn: a 44 KB system prompt (the size
// OpenClaw sends), history, and a dozen tools.
func largeBody() string {
	sys := strings.Repeat("You are a personal assistant running inside an agent runtime. Follow the workspace rules. ", 480)
	var tools []string
	for i := 0; i < 12; i++ {
		tools = append(tools, fmt.Sprintf(`{"type":"function","function":{"name":"tool_%d","description":"Tool number %d does one thing well.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}`, i, i))
	}
	return `{"model":"m","messages":[{"role":"system","content":"` + sys + `"},` +
		`{"role":"user","content":"Earlier question about the project layout"},{"role":"assistant","content":"Here is the layout you asked about."},` +
		`{"role":"user","content":"Say hello in one word."}],"tools":[` + strings.Join(tools, ",") + `],"tool_choice":"auto"}`
}

type result struct {
	p50, p99 time.Duration
	rps      float64
}

func main() {
	if childMain() {
		return
	}
	n1 := flag.Int("n1", 3000, "requests at concurrency 1")
	n32 := flag.Int("n32", 6000, "requests at concurrency 32")
	nStream := flag.Int("nstream", 1000, "streaming requests for time to first byte")
	bigMB := flag.Int("big", 100, "MiB of the large answer relayed streamed and not")
	nMem := flag.Int("memories", 10000, "memories of the loaded scenario (0 skips it)")
	nSkills := flag.Int("skills", 1000, "skills of the loaded scenario")
	nLoaded := flag.Int("nloaded", 3000, "sequential requests per target in the loaded scenario")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the loaded metaclaw run to this file (with -processes, the MetaClaw child's)")
	flag.StringVar(&traceFile, "trace", "", "write a runtime/trace of the loaded metaclaw run to this file (each request a \"request\" region; read with go tool trace; with -processes, the MetaClaw child's, each request a region from its handler's start to its end)")
	flag.StringVar(&blockProfile, "blockprofile", "", "write block and mutex profiles of the loaded metaclaw run to this file (and .mutex)")
	flag.StringVar(&memProfile, "memprofile", "", "write the allocation profile after the loaded metaclaw run to this file and the one before it to this file.base (read with go tool pprof -sample_index=alloc_space -diff_base FILE.base)")
	flag.BoolVar(&pauseLearning, "loaded-no-learning", false, "loaded scenario with memory.manual_trigger (no ingestion during the run), to see what learning costs")
	flag.IntVar(&backgroundNice, "background-nice", core.DefaultBackgroundNice, "runtime.background_nice of the loaded metaclaw run (0: background work at the process's priority); as in the daemon, above 0 it also sets GOMAXPROCS to Go's default + 2 for the loaded scenario unless GOMAXPROCS is in the environment")
	flag.StringVar(&catchUpProfile, "catchup-cpuprofile", "", "write a CPU profile of learning catching up after the loaded metaclaw run's last answer to this file")
	skipEmpty := flag.Bool("loaded-only", false, "run only the loaded scenario")
	flag.IntVar(&metaclawProcs, "metaclaw-gomaxprocs", 0, "with -processes: GOMAXPROCS of the MetaClaw child alone (0: the daemon's rule, Go's default + 2 when background work is niced)")
	processes := flag.Bool("processes", false, "run only the loaded scenario, with the bare proxy and the loaded MetaClaw host each in a child process of its own (as a user runs the daemon; the MetaClaw child sets its Ps and GC as the daemon does) and the client and the upstream in this one; CPU and allocation per request are each proxy process's own; of the profiles, -cpuprofile and -trace record the MetaClaw child, -blockprofile, -memprofile and -catchup-cpuprofile are for the in-process runs only")
	report := flag.String("tracereport", "", "instead of measuring, read a -trace file and print what its slowest requests waited on (their steps, runnable and blocked time, what else ran meanwhile)")
	reportN := flag.Int("tracereport-n", 30, "requests the -tracereport details (the slowest, and as many around the median)")
	slow := flag.String("slowreport", "", "instead of measuring, read a -trace file and split the time of its slow requests that no GC touched by their critical path's state (see -slowreport-sched)")
	slowSched := flag.String("slowreport-sched", "", "with -slowreport: `perf script --ns` output of `perf record -e sched:sched_switch -a -k CLOCK_MONOTONIC` taken during the traced run, to split running time by whether the thread had a core")
	slowPct := flag.Float64("slowreport-pct", 95, "with -slowreport: the percentile a request's latency must reach")
	flag.Parse()
	if *slow != "" {
		if err := slowReport(os.Stdout, *slow, *slowSched, *slowPct); err != nil {
			fail(err)
		}
		return
	}
	if *report != "" {
		if err := traceReport(os.Stdout, *report, *reportN); err != nil {
			fail(err)
		}
		return
	}

	up := fakellm.New()
	up.Record = false
	defer up.Close()

	if *processes {
		loadedProcesses(&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}, up.URL, *nMem, *nSkills, *nLoaded)
		return
	}
	rp, err := bareProxy(up.URL)
	if err != nil {
		fail(err)
	}
	bare := serve(rp)
	defer bare.Close()

	// Two MetaClaw proxies, each with its own store: answers waiting for
	// their turn to be in the WAL (the product), and not waiting (what
	// recording cost before), to measure the wait in the same run.
	var cleanups []func()
	defer func() {
		for _, f := range cleanups {
			f()
		}
	}()
	var cores []*core.Core
	var stores []*store.SQLite
	newProxy := func(async bool) net.Listener {
		dir, err := os.MkdirTemp("", "proxybench")
		if err != nil {
			fail(err)
		}
		st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
		if err != nil {
			fail(err)
		}
		stores = append(stores, st)
		c := core.New(core.Options{Store: st, Log: zerolog.Nop(), SpoolDir: filepath.Join(dir, "turn-spool")})
		cores = append(cores, c)
		cleanups = append(cleanups, func() { c.Close(); st.Close(); os.RemoveAll(dir) })
		px, err := proxy.New(proxy.Options{Core: c, Log: zerolog.Nop(), UpstreamAPI: apiformat.OpenAI, UpstreamBase: up.URL + "/v1", UpstreamKey: "k", RecordAsync: async})
		if err != nil {
			fail(err)
		}
		return serve(px.Handler())
	}
	mc, mcAsync := newProxy(false), newProxy(true)
	defer mc.Close()
	defer mcAsync.Close()

	targets := []struct{ name, url string }{
		{"upstream direct", up.URL},
		{"bare httputil.ReverseProxy", "http://" + bare.Addr().String()},
		{"metaclaw proxy", "http://" + mc.Addr().String()},
		{"metaclaw proxy, turn not awaited", "http://" + mcAsync.Addr().String()},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}

	if *skipEmpty {
		loaded(&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}, up.URL, "http://"+bare.Addr().String(), *nMem, *nSkills, *nLoaded)
		return
	}
	fmt.Printf("proxybench: %d requests at c=1, %d at c=32, %d streams; GOMAXPROCS machine %d cores\n\n", *n1, *n32, *nStream, runtime.NumCPU())
	big := largeBody()
	fmt.Println("| target | c=1 p50 | c=1 p99 | c=1 req/s | c=32 p50 | c=32 p99 | c=32 req/s | stream TTFB p50 | stream TTFB p99 | stream to [DONE] c=32 p50 | p99 | 45 KB agent request c=1 p50 | p99 |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	res := map[string][5]result{}
	for _, t := range targets {
		u := t.url + "/v1/chat/completions"
		run(client, u, body, 1, 200, ttfbOnly) // warm-up
		r1 := run(client, u, body, 1, *n1, whole)
		r32 := run(client, u, body, 32, *n32, whole)
		rs := run(client, u, streamBody, 1, *nStream, ttfbOnly)
		rl := run(client, u, big, 1, *nStream, whole)
		rsw := run(client, u, streamBody, 32, *nStream, whole)
		res[t.name] = [5]result{r1, r32, rs, rl, rsw}
		fmt.Printf("| %s | %s | %s | %.0f | %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", t.name, f(r1.p50), f(r1.p99), r1.rps, f(r32.p50), f(r32.p99), r32.rps,
			f(rs.p50), f(rs.p99), f(rsw.p50), f(rsw.p99), f(rl.p50), f(rl.p99))
	}
	b, m := res["bare httputil.ReverseProxy"], res["metaclaw proxy"]
	fmt.Printf("\nmetaclaw minus bare proxy: c=1 p50 %+.3f ms, p99 %+.3f ms; c=32 p50 %+.3f ms; stream TTFB p50 %+.3f ms; 45 KB request p50 %+.3f ms\n",
		ms(m[0].p50-b[0].p50), ms(m[0].p99-b[0].p99), ms(m[1].p50-b[1].p50), ms(m[2].p50-b[2].p50), ms(m[3].p50-b[3].p50))
	a := res["metaclaw proxy, turn not awaited"]
	fmt.Printf("waiting for the turn in the WAL: c=1 p50 %+.3f ms, p99 %+.3f ms; c=32 p50 %+.3f ms, p99 %+.3f ms, req/s %+.0f; stream (to [DONE]) p50 %+.3f ms\n",
		ms(m[0].p50-a[0].p50), ms(m[0].p99-a[0].p99), ms(m[1].p50-a[1].p50), ms(m[1].p99-a[1].p99), m[1].rps-a[1].rps, ms(m[4].p50-a[4].p50))
	d := res["upstream direct"]
	fmt.Printf("metaclaw minus direct:     c=1 p50 %+.3f ms, p99 %+.3f ms\n", ms(m[0].p50-d[0].p50), ms(m[0].p99-d[0].p99))

	fmt.Printf("\nlarge answers (%d MiB of text, generated by the upstream; best of 3):\n\n", *bigMB)
	fmt.Println("| target | streamed in 1 MiB events | MiB/s | not streamed | MiB/s |")
	fmt.Println("|---|---|---|---|---|")
	for _, t := range targets {
		u := t.url + "/v1/chat/completions"
		st, ns := bestOf(3, func() time.Duration { return large(client, u, *bigMB, true) }), bestOf(3, func() time.Duration { return large(client, u, *bigMB, false) })
		fmt.Printf("| %s | %.2f s | %.0f | %.2f s | %.0f |\n", t.name, st.Seconds(), float64(*bigMB)/st.Seconds(), ns.Seconds(), float64(*bigMB)/ns.Seconds())
	}
	for i, c := range cores {
		if err := c.Flush(context.Background()); err == nil {
			counts, _ := stores[i].Counts(context.Background())
			fmt.Printf("turns recorded by %s during the run: %d\n", targets[2+i].name, counts.Turns)
		}
	}
	if *nMem > 0 {
		loaded(client, up.URL, "http://"+bare.Addr().String(), *nMem, *nSkills, *nLoaded)
	}
}

// loaded runs the loaded scenario: the three targets side by side, each on
// the same sequential agent turns.
func loaded(client *http.Client, upstream, bare string, nMem, nSkills, n int) {
	// As the daemon at start: Ps above the CPUs for niced background
	// work, unless GOMAXPROCS is in the environment.
	daemon.SetProcs(backgroundNice, zerolog.Nop())
	daemon.SetGC(*gcPercent, zerolog.Nop())
	t0 := time.Now()
	ln, c, st, done, err := loadedHost(upstream, nMem, nSkills)
	if err != nil {
		fail(err)
	}
	defer done()
	fmt.Printf("\nLoaded: %d memories in the user's scope and %d skills (loaded in %v); %d sequential requests per target, each a 6 KB system prompt and a new question\n\n",
		nMem, nSkills, time.Since(t0).Round(time.Millisecond), n)
	// The last row sends the upstream the bodies as the proxy forwards
	// them (the block in the system prompt): it is not a target, but what
	// the in-process upstream spends on the bigger body, which the
	// process's CPU and allocation figures of the proxy include.
	const withBlock = "upstream direct, body with the injected block"
	block := sampleBlock(c)
	targets := []struct{ name, url, block string }{
		{"upstream direct", upstream, ""},
		{"bare httputil.ReverseProxy", bare, ""},
		{"metaclaw proxy, loaded", "http://" + ln.Addr().String(), ""},
		{withBlock, upstream, block},
	}
	fmt.Println("| target | p50 | p99 | req/s | CPU per request | allocated per request |")
	fmt.Println("|---|---|---|---|---|---|")
	res := map[string]result{}
	cpu := map[string]time.Duration{}
	alloc := map[string]uint64{}
	gcRuns := map[string]gcRun{}
	var catchUp, cpuWithCatchUp time.Duration
	var backlog int
	for _, t := range targets {
		u := t.url + "/v1/chat/completions"
		runLoaded(client, u, loadedBodies(200, 99, t.block), 99, nil) // warm-up
		bodies := loadedBodies(n, 7, t.block)                         // built before the counters start
		stop := func() {}
		if strings.HasPrefix(t.name, "metaclaw") {
			stop = startProfile(cpuProfile, blockProfile, memProfile, traceFile)
		}
		probe := newGCProbe(n)
		cpu0, alloc0 := processCPU(), allocated()
		r, g := runLoaded(client, u, bodies, 7, probe)
		gcRuns[t.name] = g
		cpu[t.name] = (processCPU() - cpu0) / time.Duration(n)
		alloc[t.name] = (allocated() - alloc0) / uint64(n)
		stop()
		if strings.HasPrefix(t.name, "metaclaw") {
			// Learning still running after the last answer is not part of
			// the run's CPU; wait for it so the next target runs alone.
			stopCatchUp := startProfile(catchUpProfile, "", "", "")
			catchUp, backlog = learningCatchUp(c, st)
			stopCatchUp()
			cpuWithCatchUp = (processCPU() - cpu0) / time.Duration(n)
		}
		res[t.name] = r
		fmt.Printf("| %s | %s | %s | %.0f | %s | %.1f KB |\n", t.name, f(r.p50), f(r.p99), r.rps, f(cpu[t.name]), float64(alloc[t.name])/1024)
	}
	b, m, d := res["bare httputil.ReverseProxy"], res["metaclaw proxy, loaded"], res["upstream direct"]
	fmt.Printf("\nloaded metaclaw minus bare proxy: p50 %+.3f ms, p99 %+.3f ms (goal: within +0.3 ms p50 and +2 ms p99)\n", ms(m.p50-b.p50), ms(m.p99-b.p99))
	fmt.Printf("loaded metaclaw minus direct:     p50 %+.3f ms, p99 %+.3f ms\n", ms(m.p50-d.p50), ms(m.p99-d.p99))
	fmt.Printf("CPU per request (this process: client, upstream and proxy; steadier than latency on a loaded machine): metaclaw %+.3f ms over bare\n",
		ms(cpu["metaclaw proxy, loaded"]-cpu["bare httputil.ReverseProxy"]))
	fmt.Printf("allocated per request (this process; what the GC has to collect, independent of the machine's load): metaclaw %+.1f KB over bare\n",
		(float64(alloc["metaclaw proxy, loaded"])-float64(alloc["bare httputil.ReverseProxy"]))/1024)
	fmt.Printf("learning at the last answer: %d jobs pending, caught up %v later; metaclaw CPU per request with the catch-up %+.3f ms over bare\n",
		backlog, catchUp.Round(time.Millisecond), ms(cpuWithCatchUp-cpu["bare httputil.ReverseProxy"]))
	upCPU, upAlloc := cpu[withBlock]-cpu["upstream direct"], float64(alloc[withBlock])-float64(alloc["upstream direct"])
	fmt.Printf("of which the upstream's, reading and decoding a body bigger by the %d-byte block (a remote LLM's in production): CPU %+.3f ms, allocated %+.1f KB\n",
		len(block), ms(upCPU), upAlloc/1024)
	fmt.Printf("so the proxy's own over bare: CPU %+.3f ms, allocated %+.1f KB per request\n",
		ms(cpu["metaclaw proxy, loaded"]-cpu["bare httputil.ReverseProxy"]-upCPU),
		(float64(alloc["metaclaw proxy, loaded"])-float64(alloc["bare httputil.ReverseProxy"])-upAlloc)/1024)
	printGC(os.Stdout, []string{"bare httputil.ReverseProxy", "metaclaw proxy, loaded"}, gcRuns)
}

// What once measures: the whole answer, or a stream's time to first byte.
const (
	whole    = false
	ttfbOnly = true
)

func run(client *http.Client, url, payload string, conc, n int, ttfb bool) result {
	lat := make([]time.Duration, n)
	var next int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if int(i) >= n {
					return
				}
				lat[i] = once(client, url, payload, ttfb)
			}
		}()
	}
	wg.Wait()
	return summarize(lat, time.Since(start))
}

func summarize(lat []time.Duration, elapsed time.Duration) result {
	n := len(lat)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return result{p50: lat[n/2], p99: lat[n*99/100], rps: float64(n) / elapsed.Seconds()}
}

// onceAs is a non-streaming request as a user (X-User-Id) in one session
// (X-Session-Id).
func onceAs(client *http.Client, url, payload, user, session string) time.Duration {
	return do(client, url, payload, user, session, false)
}

// once returns the full latency, or for streams the time to the first data line.
func once(client *http.Client, url, payload string, ttfbOnly bool) time.Duration {
	return do(client, url, payload, "", "", ttfbOnly)
}

func do(client *http.Client, url, payload, user, session string, ttfbOnly bool) time.Duration {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(payload))
	if err != nil {
		fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("X-User-Id", user)
	}
	if session != "" {
		req.Header.Set("X-Session-Id", session)
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		fail(fmt.Errorf("status %d: %s", resp.StatusCode, b))
	}
	if !ttfbOnly {
		io.Copy(io.Discard, resp.Body)
		return time.Since(t0)
	}
	br := bufio.NewReader(resp.Body)
	var ttfb time.Duration
	for {
		line, err := br.ReadString('\n')
		if ttfb == 0 && strings.HasPrefix(line, "data:") {
			ttfb = time.Since(t0)
		}
		if err != nil {
			break
		}
	}
	return ttfb
}

// large fetches a generated answer of mb MiB and returns the time to its last byte.
func large(client *http.Client, url string, mb int, stream bool) time.Duration {
	payload := fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":"BIG-%dMB"}]}`, stream, mb)
	t0 := time.Now()
	resp, err := client.Post(url, "application/json", strings.NewReader(payload))
	if err != nil {
		fail(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != 200 || n < fakellm.BigAnswerBytes(mb) {
		fail(fmt.Errorf("large answer: status %d, %d bytes, %v", resp.StatusCode, n, err))
	}
	return time.Since(t0)
}

func bestOf(n int, f func() time.Duration) time.Duration {
	best := f()
	for i := 1; i < n; i++ {
		best = min(best, f())
	}
	return best
}

// fullDuplex lets the bare proxy's handler write its answer while the
// transport may still be reading the request body it forwards. Without it
// the server closes an unread request body as the answer's header goes out,
// and when the fake upstream answered before the transport's write loop had
// sent the (small) body, the failed body read closed the upstream
// connection mid-answer ("use of closed network connection"): 8–11 of 60
// non-streamed 100 MiB answers were cut short in a loop of them, and make
// bench exited on one in 11 of 36 runs on 2026-12-03 (0 of 10 since). The
// MetaClaw proxy reads the whole body before it calls the upstream, so it
// never forwards one the server can close.
func fullDuplex(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		h.ServeHTTP(w, r)
	})
}

func serve(h http.Handler) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go http.Serve(ln, h)
	return ln
}

func f(d time.Duration) string   { return fmt.Sprintf("%.3f ms", ms(d)) }
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

var (
	cpuProfile, blockProfile, memProfile, traceFile string
	pauseLearning                                   bool
	backgroundNice                                  int
	metaclawProcs                                   int
	catchUpProfile                                  string
)

// startProfile starts the profiles asked for (any path may be empty) and
// returns what stops them and writes them.
func startProfile(cpuPath, blockPath, memPath, tracePath string) func() {
	var stops []func()
	if tracePath != "" {
		f, err := os.Create(tracePath)
		if err != nil {
			fail(err)
		}
		if err := trace.Start(f); err != nil {
			fail(err)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	if memPath != "" {
		runtime.GC() // the profile is as of the last GC
		writeProfile("allocs", memPath+".base")
		stops = append(stops, func() { runtime.GC(); writeProfile("allocs", memPath) })
	}
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if blockPath != "" {
		runtime.SetBlockProfileRate(1000) // one sample per µs blocked
		runtime.SetMutexProfileFraction(1)
		stops = append(stops, func() {
			writeProfile("block", blockPath)
			writeProfile("mutex", blockPath+".mutex")
			runtime.SetBlockProfileRate(0)
			runtime.SetMutexProfileFraction(0)
		})
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

func writeProfile(name, path string) {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		fail(err)
	}
}

// allocated is the heap this process has allocated since it started.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "proxybench:", err)
	os.Exit(1)
}
