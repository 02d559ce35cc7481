package config

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestEnsureProxyKey(t *testing.T) {
	home := t.TempDir()
	cfgs := make([]*Config, 8)
	for i := range cfgs {
		c, err := LoadWith(home, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		cfgs[i] = c
	}
	// Eight callers at once (start and wire racing): one key, shared by all.
	var wg sync.WaitGroup
	created := make([]bool, len(cfgs))
	for i, c := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if created[i], err = EnsureProxyKey(c); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n := 0
	for i, c := range cfgs {
		if created[i] {
			n++
		}
		if c.Proxy.APIKey != cfgs[0].Proxy.APIKey || !strings.HasPrefix(c.Proxy.APIKey, ProxyKeyPrefix) || len(c.Proxy.APIKey) < 40 {
			t.Fatalf("caller %d got %q, caller 0 %q", i, c.Proxy.APIKey, cfgs[0].Proxy.APIKey)
		}
	}
	if n != 1 {
		t.Fatalf("%d keys generated, want 1", n)
	}
	fi, err := os.Stat(filepath.Join(home, SecretsFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets.yaml: %v %v", fi, err)
	}
	again, _ := LoadWith(home, noEnv)
	if again.Proxy.APIKey != cfgs[0].Proxy.APIKey || again.Source("proxy.api_key") != "secrets" {
		t.Fatalf("reloaded key %q from %q", again.Proxy.APIKey, again.Source("proxy.api_key"))
	}
	if c, err := EnsureProxyKey(again); err != nil || c {
		t.Fatalf("second call: created=%v %v", c, err)
	}
}

func TestProxyAuthNone(t *testing.T) {
	home := t.TempDir()
	if err := Set(home, "proxy.auth", "none"); err != nil {
		t.Fatal(err)
	}
	c, err := LoadWith(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if created, err := EnsureProxyKey(c); err != nil || created || c.Proxy.APIKey != "" || c.ProxyAuthRequired() {
		t.Fatalf("auth none made a key: %v %v %q", created, err, c.Proxy.APIKey)
	}
	if _, err := os.Stat(filepath.Join(home, SecretsFile)); !os.IsNotExist(err) {
		t.Fatalf("secrets.yaml written: %v", err)
	}
	// Off loopback a key is not optional.
	err = Set(home, "proxy.host", "0.0.0.0")
	if err == nil || !strings.Contains(err.Error(), "proxy.auth") {
		t.Fatalf("auth none on 0.0.0.0: %v", err)
	}
}
