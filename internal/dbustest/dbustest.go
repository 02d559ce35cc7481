// Package dbustest starts the real services the scheduler's tests talk to
// over D-Bus: a private bus (Debian's dbus-daemon) and, on it, a real
// Secret Service (gnome-keyring-daemon). Each process is stopped by its pid
// when the test ends; nothing touches the machine's own buses.
package dbustest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

// need skips the test when a program is missing, except in CI, where
// .ci/run installs it and a skip would hide a broken install.
func need(t *testing.T, program, pkg, why string) string {
	t.Helper()
	bin, err := exec.LookPath(program)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI (.ci/run installs Debian's %s)", program, pkg)
		}
		t.Skipf("%s not installed (apt-get install %s); %s", program, pkg, why)
	}
	return bin
}

// PrivateBus starts a dbus-daemon of its own and returns its address.
// Nothing is activated on it: services are only those a test starts.
func PrivateBus(t *testing.T) string {
	t.Helper()
	bin := need(t, "dbus-daemon", "dbus-daemon", "the test needs a private D-Bus")
	dir := t.TempDir()
	conf := filepath.Join(dir, "bus.conf")
	err := os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+filepath.Join(dir, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--print-address=1")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	return testwait.FirstLine(t, "dbus-daemon's address", out)
}

// SecretService starts gnome-keyring-daemon (secrets component only) on a
// new private bus, with its keyrings in a temporary home and the login
// keyring created and unlocked with a test password, as a desktop login
// does. It returns the bus address once org.freedesktop.secrets answers.
func SecretService(t *testing.T) string {
	t.Helper()
	bin := need(t, "gnome-keyring-daemon", "gnome-keyring", "the keyring test needs a real Secret Service")
	addr := PrivateBus(t)
	home := t.TempDir()
	run := filepath.Join(home, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--foreground", "--components=secrets", "--unlock")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_RUNTIME_DIR=" + run, "DBUS_SESSION_BUS_ADDRESS=" + addr}
	cmd.Stdin = strings.NewReader("test-login-password")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		var owned bool
		if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.secrets").Store(&owned); err == nil && owned {
			return addr
		}
		select {
		case <-ctx.Done():
			t.Fatal("gnome-keyring-daemon did not take org.freedesktop.secrets")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
