package logging

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWritesFileAndStderrAndRotates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	var stderr bytes.Buffer
	log, closer, err := New(Options{Dir: dir, Level: "info", MaxSizeMB: 1, MaxBackups: 2, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Msg("hidden-debug")
	log.Info().Str("k", "v").Msg("hello-info")
	big := strings.Repeat("x", 64<<10)
	for i := 0; i < 40; i++ { // 2.5 MiB: at least two rotations at 1 MiB
		log.Info().Str("pad", big).Msg("fill")
	}
	closer.Close()
	if !strings.Contains(stderr.String(), "hello-info") || strings.Contains(stderr.String(), "hidden-debug") {
		t.Fatalf("stderr: level filtering wrong")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "metaclaw*.log"))
	if len(files) < 2 || len(files) > 3 {
		t.Fatalf("rotation produced %d files: %v", len(files), files)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("log dir mode %v", fi.Mode())
	}
}

func TestBadLevelFallsBackToInfo(t *testing.T) {
	var stderr bytes.Buffer
	log, _, err := New(Options{Level: "loud", Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Msg("shown")
	if !strings.Contains(stderr.String(), "shown") {
		t.Fatal("info not logged")
	}
}
