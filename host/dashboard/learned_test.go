package dashboard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/dashboard"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

const pendingSkill = `---
name: release-checklist
description: Steps to cut a release without surprises
status: pending
tags: [release, deploy]
---
1. Freeze the branch.
2. Run the full suite.
3. Tag and write the changelog.
`

const activeSkill = `---
name: flaky-test-hunt
description: Find why a test fails only sometimes
tags: [testing, flaky]
---
Run the test 50 times with -count, bisect the seed, look for shared state.
`

// TestLearnedPagesInBrowser runs the dashboard against a host with real
// skills and memory, seeded through their own APIs, and checks that the
// pages render, that search finds, and that approve and forget change the store.
func TestLearnedPagesInBrowser(t *testing.T) {
	dir := t.TempDir()
	skillsDir := filepath.Join(dir, "skills")
	for name, text := range map[string]string{"release-checklist": pendingSkill, "flaky-test-hunt": activeSkill} {
		os.MkdirAll(filepath.Join(skillsDir, name), 0o755)
		if err := os.WriteFile(filepath.Join(skillsDir, name, "SKILL.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default(dir)
	cfg.Skills.Dir = skillsDir
	cfg.Skills.AutoEvolve = false
	var lib *skills.Library
	var mem *memory.Host
	h := testhost.Start(t, testhost.Options{
		Dir: dir,
		Setup: func(c *core.Core, st *store.SQLite) []route.Route {
			sh, err := skills.Assemble(context.Background(), cfg, st, c, zerolog.Nop(), skills.AssembleOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sh.Close() })
			lib = sh.Lib
			mh, err := memory.Assemble(context.Background(), cfg, st, c, zerolog.Nop(), memory.AssembleOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mh.Close() })
			mem = mh
			routes := append(append([]route.Route(nil), sh.Routes...), mh.Routes...)
			return append(routes, dashboard.Routes(st, c)...)
		},
		Mutate: func(o *proxy.Options) { o.PublicRoutes = dashboard.Public(); o.LoopbackOnly = true },
	})
	ctx := context.Background()
	for _, text := range []string{"The user prefers tabs over spaces in Go code", "Deploys happen only on Tuesdays"} {
		if _, _, err := mem.Store.Add(ctx, memory.NewUnit{Content: text, Type: memory.Preference, Scope: "default"}); err != nil {
			t.Fatal(err)
		}
	}

	b := browser(t)
	do := func(name string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(b, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(c, steps...); err != nil {
			page, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.querySelector("main").innerText.slice(0, 1500) + " | status: " + document.querySelector("#status-line").innerText`))
			t.Fatalf("%s: %v\npage:\n%s", name, err, page)
		}
	}
	// Skills: the list renders, search narrows it, approving goes to the file and the index.
	do("skills page",
		chromedp.Navigate(h.URL+"/ui/#skills"),
		chromedp.WaitVisible(`#skills-list li[data-name="release-checklist"]`),
		chromedp.SendKeys("#skills-q", "flaky"),
		chromedp.WaitNotPresent(`#skills-list li[data-name="release-checklist"]`),
		chromedp.WaitVisible(`#skills-list li[data-name="flaky-test-hunt"]`),
	)
	if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`(() => { const q = document.querySelector("#skills-q"); q.value = ""; q.dispatchEvent(new Event("input")); return true })()`)); err != nil {
		t.Fatal(err)
	}
	do("pending skill",
		chromedp.WaitVisible(`#skills-list li[data-name="release-checklist"]`),
		chromedp.Click(`#skills-list li[data-name="release-checklist"]`),
		chromedp.WaitVisible(`#skill-view button.primary`),
	)
	screenshot(t, b, "dashboard-skills.png")
	do("approve", chromedp.Click(`#skill-view button.primary`))
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, ok := lib.Get("release-checklist")
		if ok && s.Status == "active" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("approve did not reach the library: %+v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if text, _ := os.ReadFile(filepath.Join(skillsDir, "release-checklist", "SKILL.md")); strings.Contains(string(text), "status: pending") {
		t.Fatalf("SKILL.md still pending:\n%s", text)
	}

	// Memories: search finds one, forgetting removes it from the store.
	do("memories page",
		chromedp.Navigate(h.URL+"/ui/#memories"),
		chromedp.WaitVisible("#mem-q"),
		chromedp.SendKeys("#mem-q", "tabs"),
		chromedp.WaitVisible(`#mem-list li[data-id]`),
	)
	var listed string
	for end := time.Now().Add(10 * time.Second); ; {
		var err error
		listed, err = chromedp.Run(b, chromedp.Text("#mem-list"))
		if err == nil && strings.Contains(listed, "tabs") && !strings.Contains(listed, "Tuesdays") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("memory search shows %q (%v)", listed, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	id, err := chromedp.Run(b, chromedp.Evaluate[string](`document.querySelector("#mem-list li[data-id]").dataset.id`))
	if err != nil {
		t.Fatal(err)
	}
	do("open memory",
		chromedp.Click(`#mem-list li[data-id]`),
		chromedp.WaitVisible(`#mem-view button.danger`),
	)
	screenshot(t, b, "dashboard-memories.png")
	// The page asks before forgetting; accept the dialog.
	if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`window.confirm = () => true; true`)); err != nil {
		t.Fatal(err)
	}
	do("forget", chromedp.Click(`#mem-view button.danger`), chromedp.WaitVisible(`#mem-view p.muted`))
	deadline = time.Now().Add(15 * time.Second)
	for {
		u, err := mem.Store.Get(ctx, id)
		if err != nil || u.Status != "active" {
			if err != nil && !errors.Is(err, memory.ErrNotFound) {
				t.Fatalf("get after forget: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("forget did not reach the store: %+v", u)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
