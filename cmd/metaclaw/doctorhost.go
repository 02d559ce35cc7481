package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/setup"
)

// hostClient is the name doctor files MetaClaw's own checks under.
const hostClient = "metaclaw"

// doctorConfig is doctor's first check: the configuration loads. When it
// does not, nothing else can be checked (the address, the upstream and the
// wiring all come from it).
func doctorConfig(home string) (*config.Config, adapters.Finding) {
	f := adapters.Finding{Client: hostClient}
	path := filepath.Join(home, config.ConfigFile)
	cfg, err := config.Load(home)
	if err != nil {
		f.What = "config does not load: " + err.Error()
		f.Fix = configFix(err)
		if f.Fix == "" {
			f.Fix = "metaclaw config show"
		}
		return nil, f
	}
	f.OK = true
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		f.What = "no config file (" + path + "): defaults and the environment apply; `metaclaw setup` writes one"
	} else {
		f.What = "config " + path + " loads"
	}
	if n := len(cfg.Warnings); n > 0 {
		f.What += fmt.Sprintf(" (%d warnings: metaclaw config show)", n)
	}
	return cfg, f
}

// doctorHost checks what does not depend on any client: the host process
// and the upstream LLM (with a probe request unless noProbe). pluginOnly
// says every wired client reaches MetaClaw through its plugin, which starts
// the host itself: then a stopped host is expected.
func doctorHost(ctx context.Context, home string, cfg *config.Config, pluginOnly, noProbe bool) []adapters.Finding {
	var out []adapters.Finding
	add := func(ok bool, what, fix string) {
		out = append(out, adapters.Finding{Client: hostClient, OK: ok, What: what, Fix: fix})
	}
	info, err := daemon.ReadInfo(home)
	configured := "http://" + cfg.Addr()
	switch {
	case errors.Is(err, daemon.ErrNotRunning) && getOK(ctx, configured+"/healthz") == nil:
		add(true, "a host answers at "+configured+" (not one `metaclaw start` started for "+home+")", "")
	case errors.Is(err, daemon.ErrNotRunning) && pluginOnly:
		add(true, "host not running: the wired client's plugin starts it when needed", "")
	case errors.Is(err, daemon.ErrNotRunning):
		add(false, "host not running", "metaclaw start")
	case err != nil:
		add(false, "cannot read the host's run state: "+err.Error(), "metaclaw stop; metaclaw start")
	default:
		if herr := getOK(ctx, info.URL()+"/healthz"); herr != nil {
			add(false, fmt.Sprintf("host pid %d does not answer at %s/healthz: %v", info.PID, info.URL(), herr), "metaclaw stop; metaclaw start")
		} else {
			add(true, fmt.Sprintf("host running (pid %d, %s) at %s", info.PID, info.Version, info.URL()), "")
		}
	}

	if !cfg.UpstreamConfigured() {
		add(false, "no upstream LLM configured: every request gets an error", "metaclaw setup --provider <name> --api-key-env VAR --yes")
		return out
	}
	up := cfg.Upstream()
	what := fmt.Sprintf("upstream %s %s", up.API, up.APIBase)
	if src := cfg.UpstreamSource(); src != "" && src != "default" {
		what += " (from " + src + ")"
	}
	what += "; " + keySourceText(cfg.UpstreamKeySource())
	if noProbe {
		add(true, what+"; not probed (--no-probe)", "")
		return out
	}
	if perr := setup.Probe(ctx, up.APIBase, up.API, up.APIKey, up.Model); perr != nil {
		add(false, what+": probe failed: "+perr.Error(), "metaclaw setup (or metaclaw config set llm.api_base / llm.api_key)")
	} else {
		add(true, what+": answers", "")
	}
	return out
}

// getOK fetches u and reports anything but a 200.
func getOK(ctx context.Context, u string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// onlyPluginWired reports whether at least one of the clients is wired and
// all wired ones reach MetaClaw through their plugin alone (no proxy).
func onlyPluginWired(eng *adapters.Engine, list []adapters.Adapter) bool {
	wired := 0
	for _, a := range list {
		m, err := eng.Active(a.Name())
		if err != nil || m == nil {
			continue
		}
		if m.Via.Proxy() {
			return false
		}
		wired++
	}
	return wired > 0
}

// hostDoctor carries doctor's own checks from before the client checks
// (the config) to after them (host and upstream, which need to know how the
// clients are wired).
type hostDoctor struct {
	home      string
	cfg       *config.Config
	cfgResult adapters.Finding
	noProbe   bool
}

// newHostDoctor checks the config; when it does not load, it prints that
// finding and returns the exit error (nothing else can be checked).
func newHostDoctor(cmd *cobra.Command, asJSON, noProbe bool) (*hostDoctor, error) {
	h, err := home()
	if err != nil {
		return nil, err
	}
	cfg, f := doctorConfig(h)
	if cfg == nil {
		if asJSON {
			_ = printJSON(cmd.OutOrStdout(), []adapters.Finding{f})
		} else {
			printFindings(cmd.OutOrStdout(), []adapters.Finding{f})
		}
		return nil, exitCode(1)
	}
	return &hostDoctor{home: h, cfg: cfg, cfgResult: f, noProbe: noProbe}, nil
}

// with puts MetaClaw's own findings before the clients'.
func (d *hostDoctor) with(ctx context.Context, eng *adapters.Engine, list []adapters.Adapter, clients []adapters.Finding) []adapters.Finding {
	out := append([]adapters.Finding{d.cfgResult}, doctorHost(ctx, d.home, d.cfg, onlyPluginWired(eng, list), d.noProbe)...)
	return append(out, clients...)
}
