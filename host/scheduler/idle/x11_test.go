package idle

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

// startXvfb runs Debian's Xvfb on a display number it picks itself
// (-displayfd, no fixed number) and returns ":N"; it is stopped by pid.
func startXvfb(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("Xvfb is required in CI (.ci/run installs Debian's xvfb)")
		}
		t.Skip("Xvfb not installed (apt-get install xvfb); the X11 idle test needs an X server")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(bin, "-displayfd", "3", "-nolisten", "tcp", "-screen", "0", "320x240x24")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	return ":" + testwait.FirstLine(t, "Xvfb's display number", r), cmd
}

// moveMouse sends a pointer motion through the XTEST extension, as a user
// moving the mouse.
func moveMouse(t *testing.T, display string) {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := xtest.Init(c); err != nil {
		t.Fatal(err)
	}
	root := xproto.Setup(c).DefaultScreen(c).Root
	if err := xtest.FakeInputChecked(c, xproto.MotionNotify, 0, 0, root, 100, 80, 0).Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := xproto.GetInputFocus(c).Reply(); err != nil { // a round trip: the event is in
		t.Fatal(err)
	}
}

// The X11 detector reads the idle time of a real X server (Xvfb): it
// grows while nobody touches the display, and a mouse motion (XTEST)
// drops it and wakes the scheduler. With logind absent, auto picks it;
// when the X server goes, it stops answering and traffic decides.
func TestX11IdleUnderXvfb(t *testing.T) {
	display, xvfb := startXvfb(t)
	x, err := DialX11(display, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Name() != "X11 screensaver ("+display+")" {
		t.Fatalf("name %q", x.Name())
	}
	testwait.For(t, "the idle time to pass 400ms", func() bool {
		d, ok := x.Idle(time.Now())
		return ok && d >= 400*time.Millisecond
	})
	before, _ := x.Idle(time.Now())
	select {
	case <-x.Wake():
	default:
	}
	moveMouse(t, display)
	select {
	case <-x.Wake():
	case <-time.After(15 * time.Second):
		t.Fatal("input did not wake the scheduler")
	}
	if after, ok := x.Idle(time.Now()); !ok || after >= before {
		t.Fatalf("idle after input %v (ok %v), before %v", after, ok, before)
	}

	// scheduler.idle_source auto with no logind (no system bus) falls back
	// to the display; status names it.
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-system-bus"))
	t.Setenv("DISPLAY", display)
	for _, kind := range []string{"auto", "x11"} {
		det, note := Choose(context.Background(), kind)
		if det == nil {
			t.Fatalf("%s: no detector: %s", kind, note)
		}
		src := NewSource(30*time.Minute, det, note, time.Now())
		if want := "X11 screensaver (" + display + ") + proxy traffic"; src.Label() != want {
			t.Errorf("%s: label %q, want %q", kind, src.Label(), want)
		}
		src.Close()
	}

	xvfb.Process.Signal(syscall.SIGTERM)
	xvfb.Wait()
	testwait.For(t, "the detector to notice the X server is gone", func() bool { return x.Err() != nil })
	if _, ok := x.Idle(time.Now()); ok {
		t.Fatal("a gone X server still answers")
	}
}

func TestChooseWithoutLogindOrDisplay(t *testing.T) {
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-system-bus"))
	t.Setenv("DISPLAY", "")
	if det, note := Choose(context.Background(), "auto"); det != nil || !strings.Contains(note, "logind") || !strings.Contains(note, "x11: DISPLAY is not set") {
		t.Fatalf("auto: %v %q", det, note)
	}
	t.Setenv("DISPLAY", "no-such-display")
	if det, note := Choose(context.Background(), "x11"); det != nil || !strings.Contains(note, "x11: connect to the display") {
		t.Fatalf("x11: %v %q", det, note)
	}
}
