// Command hostload measures the real host under load: it starts the
// `metaclaw` binary in the foreground against a local fake upstream, holds
// N concurrent streaming turns open for a while (each a few seconds long),
// and meanwhile probes GET /healthz. It reports the health check's latency
// percentiles, stream errors, the turns recorded and the host's peak RSS.
// `make loadtest` runs it with 1,000 streams.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/procstat"
)

const key = "hostload-proxy-key"

func main() {
	bin := flag.String("bin", "bin/metaclaw", "the metaclaw binary (make build)")
	streams := flag.Int("streams", 1000, "concurrent streaming turns held open")
	duration := flag.Duration("duration", 20*time.Second, "how long to hold the load")
	words := flag.Int("words", 100, "words (stream events) per answer")
	delay := flag.Duration("event-delay", 20*time.Millisecond, "upstream pause between events")
	baseline := flag.Duration("baseline", 5*time.Second, "/healthz probing before the load starts")
	probeAddr := flag.String("probe", "", "internal: probe this address's /healthz for -duration and print the latencies")
	flag.Parse()
	if *probeAddr != "" {
		probe(*probeAddr, *duration)
		return
	}

	up := fakellm.New()
	up.Record = false
	up.Reply = strings.TrimSpace(strings.Repeat("word ", *words))
	up.EventDelay = *delay
	defer up.Close()

	home, err := os.MkdirTemp("", "hostload")
	check(err)
	defer os.RemoveAll(home)
	host, addr := start(*bin, home, up.URL)
	pid := host.Process.Pid
	defer func() {
		host.Process.Signal(os.Interrupt)
		host.Wait()
	}()

	// The probe runs in its own process, so that the load generator's
	// goroutines do not delay it: it measures the host alone. First without
	// load, as the baseline of this machine at this moment.
	idle := probeFor(addr, *baseline)
	cpuBefore := procstat.CPUSeconds(pid)

	tr := &http.Transport{MaxIdleConnsPerHost: *streams + 16, DisableCompression: true}
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < *streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				err := stream(ctx, client, addr, fmt.Sprintf("load-%d", i), fmt.Sprintf("turn %d of stream %d", n, i))
				switch {
				case err == nil:
					ok.Add(1)
				case ctx.Err() != nil:
					return // cut by the end of the run, not the host's fault
				default:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}

	time.Sleep(time.Second) // let the streams open
	loaded := probeFor(addr, *duration-2*time.Second)
	<-ctx.Done()
	wg.Wait()
	hwm := procstat.KB(pid, "VmHWM")
	cpu := procstat.CPUSeconds(pid) - cpuBefore
	turns := countTurns(home)

	fmt.Printf("hostload: %d concurrent streams for %s (%d events of %s each), real host pid %d\n", *streams, *duration, *words, *delay, pid)
	fmt.Printf("streams completed %d, failed %d", ok.Load(), failed.Load())
	if e := firstErr.Load(); e != nil {
		fmt.Printf(" (first error: %s)", e)
	}
	fmt.Printf("\n/healthz without load:   %s\n", idle)
	fmt.Printf("/healthz under the load: %s\n", loaded)
	fmt.Printf("turns recorded %d; host peak RSS %d MiB; host CPU %.1f s under the load (%.1f ms per completed stream)\n",
		turns, hwm>>10, cpu, 1000*cpu/float64(max(ok.Load(), 1)))
}

// latencies summarises probe results.
type latencies struct {
	ok     []time.Duration
	failed int
}

func (l latencies) String() string {
	if len(l.ok) == 0 {
		return fmt.Sprintf("no successful probe (%d failed)", l.failed)
	}
	sort.Slice(l.ok, func(i, j int) bool { return l.ok[i] < l.ok[j] })
	pct := func(p float64) string {
		return fmt.Sprintf("%.2f ms", float64(l.ok[min(len(l.ok)-1, int(float64(len(l.ok))*p))].Microseconds())/1000)
	}
	return fmt.Sprintf("%d probes (failed %d): p50 %s, p99 %s, max %s", len(l.ok), l.failed, pct(0.5), pct(0.99), pct(1))
}

// probeFor runs the probe in a child process for d.
func probeFor(addr string, d time.Duration) latencies {
	self, err := os.Executable()
	check(err)
	out, err := exec.Command(self, "-probe", addr, "-duration", d.String()).Output()
	check(err)
	var l latencies
	for _, f := range strings.Fields(string(out)) {
		if f == "x" {
			l.failed++
			continue
		}
		us, _ := strconv.ParseInt(f, 10, 64)
		l.ok = append(l.ok, time.Duration(us)*time.Microsecond)
	}
	return l
}

// probe prints the latency of GET /healthz every 10 ms, in microseconds
// ("x" for a failure), until d has passed.
func probe(addr string, d time.Duration) {
	client := &http.Client{Timeout: 30 * time.Second}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		t0 := time.Now()
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != 200 {
			fmt.Println("x")
		} else {
			fmt.Println(time.Since(t0).Microseconds())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// start runs `metaclaw start --foreground` and waits for /healthz.
func start(bin, home, upstream string) (*exec.Cmd, string) {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "METACLAW_") && !strings.HasPrefix(k, "OPENAI_") && !strings.HasPrefix(k, "ANTHROPIC_") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(bin, "start", "--foreground", "--port", "0")
	cmd.Env = append(env, "METACLAW_HOME="+home, "OPENAI_BASE_URL="+upstream+"/v1", "OPENAI_API_KEY=sk-load",
		"METACLAW_PROXY_API_KEY="+key, "METACLAW_LOG_LEVEL=warn")
	// The host's log is in $METACLAW_HOME/logs; its stderr would repeat it.
	check(cmd.Start())
	for i := 0; i < 600; i++ {
		if info, err := daemon.ReadInfo(home); err == nil && info.Addr != "" {
			if resp, err := http.Get("http://" + info.Addr + "/healthz"); err == nil {
				resp.Body.Close()
				return cmd, info.Addr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	check(errors.New("the host did not answer /healthz within 30 s"))
	return nil, ""
}

// stream runs one streaming turn to its [DONE].
func stream(ctx context.Context, client *http.Client, addr, session, text string) error {
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Session-Id", session)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "data: [DONE]" {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("stream ended without [DONE]")
}

// countTurns asks the store (beside the running host: WAL readers do not
// block it) how many turns were recorded.
func countTurns(home string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.OpenSQLite(ctx, filepath.Join(home, "metaclaw.db"))
	if err != nil {
		return -1
	}
	defer st.Close()
	c, err := st.Counts(ctx)
	if err != nil {
		return -1
	}
	return c.Turns
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostload:", err)
		os.Exit(1)
	}
}
