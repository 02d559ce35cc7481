package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/dashboard"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

func startHost(t *testing.T, key string) *testhost.Host {
	return testhost.Start(t, testhost.Options{
		Setup: func(c *core.Core, st *store.SQLite) []route.Route { return dashboard.Routes(st, c) },
		Mutate: func(o *proxy.Options) {
			o.APIKey = key
			o.PublicRoutes = dashboard.Public()
		},
	})
}

func get(t *testing.T, url, key string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestPageAndAPIAuth(t *testing.T) {
	h := startHost(t, "dash-key")
	code, body, hdr := get(t, h.URL+"/ui/", "")
	if code != 200 || !strings.Contains(body, "<title>MetaClaw</title>") || !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("page: %d %v", code, hdr)
	}
	for _, asset := range []string{"/ui/app.js", "/ui/style.css"} {
		if code, _, _ := get(t, h.URL+asset, ""); code != 200 {
			t.Fatalf("%s: %d", asset, code)
		}
	}
	if code, _, _ := get(t, h.URL+"/v1/activity", ""); code != 401 {
		t.Fatalf("activity without key: %d", code)
	}
	// Record a turn, then the activity and recent-turns API report it.
	req, _ := http.NewRequest(http.MethodPost, h.URL+"/a/coder/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer dash-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("turn: %v %v", resp, err)
	}
	resp.Body.Close()
	h.Flush(t)
	code, body, _ = get(t, h.URL+"/v1/activity?days=7", "dash-key")
	var act struct {
		Buckets []store.ActivityBucket `json:"buckets"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &act) != nil || len(act.Buckets) != 1 || act.Buckets[0].Agent != "coder" || act.Buckets[0].Turns != 1 {
		t.Fatalf("activity: %d %s", code, body)
	}
	code, body, _ = get(t, h.URL+"/v1/turns/recent?limit=5", "dash-key")
	if code != 200 || !strings.Contains(body, `"agent":"coder"`) {
		t.Fatalf("recent: %d %s", code, body)
	}
}

func TestActivityPageInBrowser(t *testing.T) {
	h := startHost(t, "dash-key")
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest(http.MethodPost, h.URL+"/a/main/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
		req.Header.Set("Authorization", "Bearer dash-key")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	// The layer's own LLM spending shows up as a plot.
	if err := h.Store.RecordUsage(context.Background(), store.Usage{Purpose: "evolver", Model: "m", InputTokens: 1200, OutputTokens: 300, OK: true}); err != nil {
		t.Fatal(err)
	}
	h.Flush(t)
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(h.URL+"/ui/#activity"),
		// The key is asked for first.
		chromedp.WaitVisible("#login-key"),
		chromedp.SendKeys("#login-key", "dash-key"),
		chromedp.Click("#login-form button"),
		chromedp.WaitNotVisible("#login"),
		chromedp.WaitVisible("#status-cards .card"),
	)
	if err != nil {
		t.Fatal(err)
	}
	cards, err := chromedp.Run(ctx, chromedp.Text("#status-cards"))
	if err != nil || !strings.Contains(cards, "3") || !strings.Contains(cards, "turns") {
		t.Fatalf("status cards: %q %v", cards, err)
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#chart-turns rect").length`))
	if err != nil || bars == 0 {
		t.Fatalf("no bars drawn: %d %v", bars, err)
	}
	usageBars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#chart-usage rect").length`))
	if err != nil || usageBars != 2 {
		t.Fatalf("usage plot has %d bars (%v), want input and output of the evolver", usageBars, err)
	}
	usageTable, _ := chromedp.Run(ctx, chromedp.Text("#usage"))
	if !strings.Contains(usageTable, "evolver") || !strings.Contains(usageTable, "1200") {
		t.Fatalf("usage table %q", usageTable)
	}
	screenshot(t, ctx, "dashboard-activity.png")
	// Key 4 opens the Training tab; this host has no training loop (mode
	// skills_only), and the tab says so.
	if err := chromedp.Do(ctx, chromedp.KeyEvent("4"), chromedp.WaitVisible("#training")); err != nil {
		t.Fatal(err)
	}
	// The tab fills its state line after its fetch answers: wait for it.
	state, _ := chromedp.Run(ctx, chromedp.Poll[string](`document.querySelector("#training-state").textContent || false`, chromedp.WithPollingTimeout(time.Minute)))
	if !strings.Contains(state, "not running on this host") {
		t.Fatalf("training tab without RL: %q", state)
	}
}
