package idle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"

	"github.com/metaclaw-go/metaclaw/internal/dbustest"
)

// fakeLogind serves the part of org.freedesktop.login1 the detector uses:
// Manager.GetSession, the "auto" session alias and one session's
// properties, which emit PropertiesChanged as logind does.
type fakeLogind struct {
	conn  *dbus.Conn
	props *prop.Properties
}

func startFakeLogind(t *testing.T, addr string) *fakeLogind {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	session := dbus.ObjectPath("/org/freedesktop/login1/session/_37")
	sessionProps := func() prop.Map {
		return prop.Map{sessionIfc: {
			"Id":            {Value: "7", Emit: prop.EmitFalse},
			"Type":          {Value: "wayland", Emit: prop.EmitFalse},
			"IdleHint":      {Value: false, Writable: true, Emit: prop.EmitTrue},
			"IdleSinceHint": {Value: uint64(0), Writable: true, Emit: prop.EmitTrue},
		}}
	}
	props, err := prop.Export(conn, session, sessionProps())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prop.Export(conn, login1Path+"/session/auto", sessionProps()); err != nil {
		t.Fatal(err)
	}
	err = conn.ExportMethodTable(map[string]any{
		"GetSession": func(id string) (dbus.ObjectPath, *dbus.Error) {
			if id != "7" {
				return "", dbus.NewError("org.freedesktop.login1.NoSuchSession", []any{"no session " + id})
			}
			return session, nil
		},
	}, login1Path, managerIfc)
	if err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName(login1, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", login1, reply, err)
	}
	return &fakeLogind{conn: conn, props: props}
}

// setIdle plays the desktop: the user stopped at since (idle) or is back.
func (f *fakeLogind) setIdle(idle bool, since time.Time) {
	us := uint64(0)
	if idle {
		us = uint64(since.UnixMicro())
	}
	f.props.SetMust(sessionIfc, "IdleSinceHint", us)
	f.props.SetMust(sessionIfc, "IdleHint", idle)
}

// untilWoken waits for wake-ups of src until its verdict at now has the
// wanted openness (one change of the desktop may take two signals).
func untilWoken(t *testing.T, src *Source, now time.Time, open bool) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-src.Wake():
			if v := src.Check(now); v.Open == open {
				return v.Reason
			}
		case <-deadline:
			t.Fatalf("no wake-up turned the source open=%v: %+v", open, src.Check(now))
		}
	}
}

func TestLogindOverAPrivateBus(t *testing.T) {
	addr := dbustest.PrivateBus(t)
	fake := startFakeLogind(t, addr)
	l, err := DialLogind(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Name() != "logind session 7 (wayland)" {
		t.Fatalf("name %q", l.Name())
	}
	now := time.Now()
	if d, ok := l.Idle(now); !ok || d != 0 {
		t.Fatalf("active session: %s %v", d, ok)
	}

	// The desktop marks the session idle since 40 minutes ago: the signal
	// wakes the source, which opens with a 30-minute threshold.
	src := NewSource(30*time.Minute, l, "", now.Add(-time.Hour))
	defer src.Close()
	fake.setIdle(true, now.Add(-40*time.Minute))
	if why := untilWoken(t, src, now, true); !strings.Contains(why, "idle for 40m0s (logind session 7") {
		t.Fatalf("idle session: %s", why)
	}
	// The user touches the keyboard: logind clears the hint, the source
	// hears it at once and closes.
	fake.setIdle(false, time.Time{})
	if why := untilWoken(t, src, now, false); !strings.Contains(why, "no input (logind") {
		t.Fatalf("user back: %s", why)
	}
	if src.Label() != "logind session 7 (wayland) + proxy traffic" {
		t.Fatalf("label %q", src.Label())
	}
}

func TestLogindWithoutASession(t *testing.T) {
	addr := dbustest.PrivateBus(t)
	// A bus with no logind on it: the error says so, the caller falls back.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := DialLogind(ctx, addr); err == nil || !strings.Contains(err.Error(), "logind") {
		t.Fatalf("err = %v", err)
	}
}
