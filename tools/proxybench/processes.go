package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/daemon"
)

// The loaded scenario in processes (-processes): the bare proxy and the
// loaded MetaClaw host each run in a child process of their own, as a user
// runs the daemon, while this process holds the client and the fake
// upstream. In-process, one Go runtime schedules the client, the upstream
// and the proxy together and GOMAXPROCS sets all their Ps at once; here
// each proxy has its own runtime, its own Ps (the MetaClaw child takes the
// daemon's) and its own CPU figure.

// childEnv holds a child's spec as JSON; a proxybench started with it set
// is a child.
const childEnv = "PROXYBENCH_CHILD"

// childSpec says what a child serves.
type childSpec struct {
	Kind     string `json:"kind"` // "bare" or "metaclaw"
	Upstream string `json:"upstream"`
	Memories int    `json:"memories"`
	Skills   int    `json:"skills"`
	// As the flags of the same names, for the MetaClaw child.
	GCPercent      int  `json:"gc_percent"`
	BackgroundNice int  `json:"background_nice"`
	NoLearning     bool `json:"no_learning"`
	// Procs, above 0, is the child's GOMAXPROCS (as if set in the daemon's
	// environment); 0 leaves it to the daemon's rule.
	Procs int `json:"procs"`
	// CPUProfile and Trace, when set, are written by the child between the
	// "profile" and "endprofile" commands (as -cpuprofile and -trace).
	CPUProfile string `json:"cpu_profile"`
	Trace      string `json:"trace"`
}

// The child's line protocol: it prints "listen ADDR" once it serves, then
// answers each line on its stdin — "stats" with "stats CPU_NS ALLOC_BYTES"
// (its own CPU time and bytes allocated so far), "procs" with "procs
// GOMAXPROCS CPUS", "catchup" with "catchup NS BACKLOG" (learning's wait,
// see learningCatchUp), "profile" and "endprofile" (its CPU profile and
// trace, if its spec asks for them) with "profile 0 0" and "endprofile 0
// 0" — and exits when its stdin closes.

// bareProxy is the bare reverse proxy every run compares against.
func bareProxy(upstream string) (http.Handler, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", upstream, err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Same connection pooling as the metaclaw proxy's transport, for a fair comparison.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	rp.Transport = tr
	rp.FlushInterval = -1 // flush every write, as metaclaw does for streams
	return fullDuplex(rp), nil
}

// runChild serves spec until stdin closes.
func runChild(spec childSpec, in io.Reader, out io.Writer) error {
	var catchUp func() (time.Duration, int)
	var addr string
	switch spec.Kind {
	case "bare":
		h, err := bareProxy(spec.Upstream)
		if err != nil {
			return err
		}
		ln := serve(h)
		defer ln.Close()
		addr = ln.Addr().String()
		catchUp = func() (time.Duration, int) { return 0, 0 }
	case "metaclaw":
		// As the daemon at start.
		backgroundNice, pauseLearning = spec.BackgroundNice, spec.NoLearning
		requestRegions = spec.Trace != ""
		daemon.SetProcs(spec.BackgroundNice, zerolog.Nop())
		daemon.SetGC(spec.GCPercent, zerolog.Nop())
		ln, c, st, done, err := loadedHost(spec.Upstream, spec.Memories, spec.Skills)
		if err != nil {
			return err
		}
		defer done()
		addr = ln.Addr().String()
		catchUp = func() (time.Duration, int) { return learningCatchUp(c, st) }
	default:
		return fmt.Errorf("child kind %q: want bare or metaclaw", spec.Kind)
	}
	fmt.Fprintf(out, "listen %s\n", addr)
	stopProfile := func() {}
	defer func() { stopProfile() }()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "stats":
			fmt.Fprintf(out, "stats %d %d\n", processCPU(), allocated())
		case "profile":
			stopProfile = startProfile(spec.CPUProfile, "", "", spec.Trace)
			fmt.Fprintln(out, "profile 0 0")
		case "endprofile":
			stopProfile()
			stopProfile = func() {}
			fmt.Fprintln(out, "endprofile 0 0")
		case "procs":
			fmt.Fprintf(out, "procs %d %d\n", runtime.GOMAXPROCS(0), runtime.NumCPU())
		case "catchup":
			d, n := catchUp()
			fmt.Fprintf(out, "catchup %d %d\n", d, n)
		default:
			fmt.Fprintf(out, "error unknown command %q\n", sc.Text())
		}
	}
	return sc.Err()
}

// childMain runs this process as the child its environment names, if it
// names one, and reports whether it did.
func childMain() bool {
	raw := os.Getenv(childEnv)
	if raw == "" {
		return false
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fail(fmt.Errorf("%s: %w", childEnv, err))
	}
	if err := runChild(spec, os.Stdin, os.Stdout); err != nil {
		fail(err)
	}
	return true
}

// child is a started child process.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	// lines are the child's stdout lines, read by one goroutine until EOF
	// (closed then), so a read that timed out leaves no second reader.
	lines chan string
	addr  string
}

// startChild starts this executable as the child spec says and waits (at
// most startTimeout: a loaded host seeds its memories first) until it
// serves.
func startChild(spec childSpec, startTimeout time.Duration) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	if spec.Procs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(spec.Procs))
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s child: %w", spec.Kind, err)
	}
	c := &child{cmd: cmd, in: in, lines: make(chan string, 1)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(outPipe)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	line, err := c.readLine(startTimeout)
	if err != nil || !strings.HasPrefix(line, "listen ") {
		c.kill()
		return nil, fmt.Errorf("the %s child did not start: %q %v", spec.Kind, line, err)
	}
	c.addr = strings.TrimPrefix(line, "listen ")
	return c, nil
}

// readLine reads the child's next line, giving up after timeout.
func (c *child) readLine(timeout time.Duration) (string, error) {
	select {
	case l, ok := <-c.lines:
		if !ok {
			return "", io.EOF
		}
		return l, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("no answer in %v", timeout)
	}
}

// ask sends a command and returns the numbers of its answer.
func (c *child) ask(cmd string, timeout time.Duration) ([2]int64, error) {
	var v [2]int64
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		return v, fmt.Errorf("%s: %w", cmd, err)
	}
	line, err := c.readLine(timeout)
	if err != nil {
		return v, fmt.Errorf("%s: %w", cmd, err)
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != cmd {
		return v, fmt.Errorf("%s: answer %q", cmd, line)
	}
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return v, fmt.Errorf("%s: answer %q: %w", cmd, line, err)
		}
	}
	return v, nil
}

// stats is the child's CPU time and bytes allocated so far.
func (c *child) stats() (time.Duration, uint64, error) {
	v, err := c.ask("stats", 30*time.Second)
	return time.Duration(v[0]), uint64(v[1]), err
}

// stop closes the child's stdin and waits for it to exit (killing it after
// 30 s).
func (c *child) stop() error {
	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		c.kill()
		return fmt.Errorf("the child %d did not exit in 30 s; killed", c.cmd.Process.Pid)
	}
}

func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// loadedProcesses is the loaded scenario with each proxy in its own
// process.
func loadedProcesses(client *http.Client, upstream string, nMem, nSkills, n int) {
	t0 := time.Now()
	bare, err := startChild(childSpec{Kind: "bare", Upstream: upstream}, time.Minute)
	if err != nil {
		fail(err)
	}
	defer bare.stop()
	mc, err := startChild(childSpec{Kind: "metaclaw", Upstream: upstream, Memories: nMem, Skills: nSkills,
		GCPercent: *gcPercent, BackgroundNice: backgroundNice, NoLearning: pauseLearning, Procs: metaclawProcs,
		CPUProfile: cpuProfile, Trace: traceFile}, 5*time.Minute)
	if err != nil {
		fail(err)
	}
	defer mc.stop()
	// Whatever the host still does after its start runs before the runs.
	if _, err := mc.ask("catchup", time.Minute); err != nil {
		fail(err)
	}
	procs, err := mc.ask("procs", 30*time.Second)
	if err != nil {
		fail(err)
	}
	fmt.Printf("\nLoaded, each proxy in its own process: %d memories in the user's scope and %d skills (loaded in %v); %d sequential requests per target, each a 6 KB system prompt and a new question; the client and the upstream in this process; GOMAXPROCS %d here and in the bare proxy's process, %d in MetaClaw's\n\n",
		nMem, nSkills, time.Since(t0).Round(time.Millisecond), n, runtime.GOMAXPROCS(0), procs[0])
	targets := []struct {
		name, url string
		proc      *child
	}{
		{"upstream direct", upstream, nil},
		{"bare httputil.ReverseProxy", "http://" + bare.addr, bare},
		{"metaclaw proxy, loaded", "http://" + mc.addr, mc},
	}
	fmt.Println("| target | p50 | p99 | req/s | proxy process CPU per request | proxy process allocated per request | this process CPU per request |")
	fmt.Println("|---|---|---|---|---|---|---|")
	res := map[string]result{}
	cpu := map[string]time.Duration{}
	var catchUp, cpuWithCatchUp time.Duration
	var backlog int64
	for _, t := range targets {
		u := t.url + "/v1/chat/completions"
		runLoaded(client, u, loadedBodies(200, 99, ""), 99, nil) // warm-up
		bodies := loadedBodies(n, 7, "")
		var childCPU0 time.Duration
		var childAlloc0 uint64
		if t.proc != nil {
			if childCPU0, childAlloc0, err = t.proc.stats(); err != nil {
				fail(err)
			}
		}
		profiled := t.proc == mc && (cpuProfile != "" || traceFile != "")
		if profiled {
			if _, err := mc.ask("profile", time.Minute); err != nil {
				fail(err)
			}
		}
		own0 := processCPU()
		r, _ := runLoaded(client, u, bodies, 7, nil)
		own := (processCPU() - own0) / time.Duration(n)
		if profiled {
			if _, err := mc.ask("endprofile", time.Minute); err != nil {
				fail(err)
			}
		}
		res[t.name] = r
		procCPU, procAlloc := "–", "–"
		if t.proc != nil {
			c1, a1, err := t.proc.stats()
			if err != nil {
				fail(err)
			}
			cpu[t.name] = (c1 - childCPU0) / time.Duration(n)
			procCPU, procAlloc = f(cpu[t.name]), fmt.Sprintf("%.1f KB", float64(a1-childAlloc0)/float64(n)/1024)
			if t.proc == mc {
				// Learning still running after the last answer is not part
				// of the run; wait for it so the next run starts alone.
				v, err := mc.ask("catchup", time.Minute)
				if err != nil {
					fail(err)
				}
				catchUp, backlog = time.Duration(v[0]), v[1]
				c2, _, err := mc.stats()
				if err != nil {
					fail(err)
				}
				cpuWithCatchUp = (c2 - childCPU0) / time.Duration(n)
			}
		}
		fmt.Printf("| %s | %s | %s | %.0f | %s | %s | %s |\n", t.name, f(r.p50), f(r.p99), r.rps, procCPU, procAlloc, f(own))
	}
	b, m, d := res["bare httputil.ReverseProxy"], res["metaclaw proxy, loaded"], res["upstream direct"]
	fmt.Printf("\nloaded metaclaw minus bare proxy, each in its own process: p50 %+.3f ms, p99 %+.3f ms (goal: within +0.3 ms p50 and +2 ms p99)\n", ms(m.p50-b.p50), ms(m.p99-b.p99))
	fmt.Printf("loaded metaclaw minus direct:     p50 %+.3f ms, p99 %+.3f ms\n", ms(m.p50-d.p50), ms(m.p99-d.p99))
	fmt.Printf("proxy process CPU per request: metaclaw %+.3f ms over bare\n", ms(cpu["metaclaw proxy, loaded"]-cpu["bare httputil.ReverseProxy"]))
	fmt.Printf("learning at the last answer: %d jobs pending, caught up %v later; metaclaw process CPU per request with the catch-up %+.3f ms over bare\n",
		backlog, catchUp.Round(time.Millisecond), ms(cpuWithCatchUp-cpu["bare httputil.ReverseProxy"]))
}
