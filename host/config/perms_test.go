package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefusesAPlantableHome(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, home string)
		want  []string
	}{
		{"world-writable home", func(t *testing.T, home string) { os.Chmod(home, 0o777) }, []string{"writable by every user", "chmod 700 " + "HOME"}},
		{"world-writable config", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, ConfigFile), []byte("mode: auto\n"), 0o600)
			os.Chmod(filepath.Join(home, ConfigFile), 0o666)
		}, []string{ConfigFile, "writable by every user", "chmod 600"}},
		{"config owned by another user", func(t *testing.T, home string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another uid")
			}
			p := filepath.Join(home, ConfigFile)
			os.WriteFile(p, []byte("mode: auto\n"), 0o644)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{ConfigFile, "belongs to uid 65534", "chown"}},
		{"secrets owned by another user", func(t *testing.T, home string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another uid")
			}
			p := filepath.Join(home, SecretsFile)
			os.WriteFile(p, []byte("llm:\n  api_key: x\n"), 0o600)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{SecretsFile, "belongs to uid 65534"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			c.setup(t, home)
			_, err := LoadWith(home, noEnv)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), strings.ReplaceAll(w, "HOME", home)) {
					t.Fatalf("error lacks %q: %v", w, err)
				}
			}
			if err := Set(home, "mode", "auto"); err == nil {
				t.Fatal("config set wrote into it")
			}
		})
	}
	// A private home loads.
	home := t.TempDir()
	if _, err := LoadWith(home, noEnv); err != nil {
		t.Fatal(err)
	}
}
