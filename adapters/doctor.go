package adapters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// Finding is one doctor check.
type Finding struct {
	Client string `json:"client"`
	OK     bool   `json:"ok"`
	What   string `json:"what"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorInput is what doctor needs to know about MetaClaw itself.
type DoctorInput struct {
	Request  *Request // proxy host/port/key from the MetaClaw config
	Override map[string]string
	// Probe, when set, runs a probe turn through the host's core for one
	// wired client and agent (no LLM call, nothing recorded). It returns
	// what was checked and, on failure, the fix. Doctor calls it after the
	// config checks of each wired client, once per agent.
	Probe func(ctx context.Context, client, agent string) (ok bool, what, fix string)
}

// Checker is implemented by adapters that check more than the recorded
// expectations: an installation made by hand (m is nil: the client was not
// wired by metaclaw), or live settings that decide whether it works.
type Checker interface {
	Check(env *Env, d *Detection, m *Manifest) []Finding
}

// Doctor checks every detected or wired client: that its config points at
// a live proxy on the configured address, that metaclaw's entries are still
// in place, and that extensions and hooks are installed and allowed.
func (e *Engine) Doctor(ctx context.Context, all []Adapter, in DoctorInput) []Finding {
	var out []Finding
	req := in.Request
	health := "http://" + req.LocalHost() + ":" + strconv.Itoa(req.ProxyPort) + "/healthz"
	proxyUp, proxyErr := e.healthy(ctx, health)
	proxyReported := false
	for _, a := range all {
		name := a.Name()
		add := func(ok bool, what, fix string) {
			out = append(out, Finding{Client: name, OK: ok, What: what, Fix: fix})
		}
		m, err := e.Active(name)
		if err != nil {
			add(false, "cannot read the wiring record: "+err.Error(), "check "+e.backupRoot(name))
			continue
		}
		d, derr := a.Detect(e.Env, in.Override[name])
		var ue *UnsupportedError
		switch {
		case errors.As(derr, &ue):
			add(false, ue.Msg, "update metaclaw")
			continue
		case derr != nil:
			add(false, derr.Error(), "fix the file, then run `metaclaw doctor` again")
			continue
		}
		checker, _ := a.(Checker)
		if m == nil {
			if !d.Found {
				continue
			}
			var found []Finding
			if checker != nil {
				found = checker.Check(e.Env, d, nil)
			}
			if len(found) == 0 {
				add(false, fmt.Sprintf("%s %s found (%s) but not wired", name, d.Version, d.ConfigPath), "metaclaw wire "+name)
			}
			for _, f := range found {
				add(f.OK, f.What, f.Fix)
			}
			continue
		}
		if !d.Found {
			add(false, fmt.Sprintf("wired on %s, but %s is no longer found at %s", m.UpdatedAt.Format("2006-01-02"), name, m.ConfigPath),
				"metaclaw unwire "+name+" --force (or reinstall "+name+")")
			continue
		}
		add(true, fmt.Sprintf("%s %s wired (agents %s, via %s)", name, d.Version, strings.Join(m.Agents, ", "), m.Via), "")
		// A client wired through its plugin only does not need the proxy
		// (the plugin starts the host itself).
		if m.Via.Proxy() && (!proxyReported || !proxyUp) {
			if proxyUp {
				add(true, "proxy answers at "+health, "")
				proxyReported = true
			} else {
				add(false, fmt.Sprintf("proxy does not answer at %s (%v)", health, proxyErr), "metaclaw start")
			}
		}
		for agent, u := range m.URLs {
			pu, err := url.Parse(u)
			if err != nil {
				continue
			}
			if pu.Port() != strconv.Itoa(req.ProxyPort) {
				add(false, fmt.Sprintf("agent %s points at port %s, but the proxy is configured on port %d", agent, pu.Port(), req.ProxyPort),
					fmt.Sprintf("metaclaw wire %s%s", name, agentFlags(m.Agents)))
			}
		}
		if m.Sandbox && (req.Loopback() || req.ProxyKey == "") {
			add(false, name+" reaches the proxy from a container, but the proxy listens on loopback only or has no key",
				"metaclaw config set proxy.api_key <key>; metaclaw config set proxy.host <bridge address>; metaclaw stop; metaclaw start")
		}
		for _, x := range m.Expect {
			ok, got := checkExpect(x)
			if ok {
				add(true, x.What, "")
			} else {
				add(false, x.What+": "+got, fmt.Sprintf("metaclaw wire %s%s --force", name, agentFlags(m.Agents)))
			}
		}
		if checker != nil {
			for _, f := range checker.Check(e.Env, d, m) {
				add(f.OK, f.What, f.Fix)
			}
		}
		if ed, err := edited(m); err == nil && len(ed) > 0 {
			add(true, "changed since wiring (by you or by "+name+"): "+strings.Join(ed, ", "), "")
		}
		if in.Probe != nil {
			agents := m.Agents
			if len(agents) == 0 {
				agents = []string{"default"}
			}
			for _, agent := range agents {
				add(in.Probe(ctx, name, agent))
			}
		}
	}
	return out
}

func agentFlags(agents []string) string {
	var b strings.Builder
	for _, a := range agents {
		b.WriteString(" --agent " + a)
	}
	return b.String()
}

func (e *Engine) healthy(ctx context.Context, u string) (bool, error) {
	hc := e.Env.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	resp, err := hc.Do(r)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("status %s", resp.Status)
	}
	return true, nil
}

// checkExpect verifies one expectation; got describes what was found.
func checkExpect(x Expect) (bool, string) {
	b, err := os.ReadFile(x.File)
	if err != nil {
		return false, "missing (" + x.File + ")"
	}
	if x.Path == nil {
		return true, ""
	}
	v, err := Decode(x.Format, b)
	if err != nil {
		return false, x.File + " does not parse: " + err.Error()
	}
	var cur any
	var ok bool
	if env, isEnv := v.(*edit.Env); isEnv {
		k, _ := x.Path[0].(string)
		var s string
		s, ok = env.Get(k)
		cur = s
	} else {
		cur, ok = walk(v, x.Path)
	}
	if !ok {
		return false, fmt.Sprintf("%s is missing in %s", edit.Path(x.Path), x.File)
	}
	want := edit.Canon(x.Want)
	if list, isList := cur.([]any); isList {
		if _, wantList := x.Want.([]any); !wantList {
			for _, el := range list {
				if edit.Canon(el) == want {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%s in %s does not contain %s", edit.Path(x.Path), x.File, want)
		}
	}
	if edit.Canon(cur) != want {
		return false, fmt.Sprintf("%s in %s is %s, want %s", edit.Path(x.Path), x.File, edit.Canon(cur), want)
	}
	return true, ""
}

// walk follows a path through a decoded tree (JSON numbers in manifests
// come back as float64 indexes).
func walk(v any, p []any) (any, bool) {
	cur := v
	for _, s := range p {
		switch s := s.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[s]; !ok {
				return nil, false
			}
		case float64, int:
			i := 0
			switch n := s.(type) {
			case float64:
				i = int(n)
			case int:
				i = n
			}
			a, ok := cur.([]any)
			if !ok || i < 0 || i >= len(a) {
				return nil, false
			}
			cur = a[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
