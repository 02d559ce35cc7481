package idle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	login1      = "org.freedesktop.login1"
	login1Path  = dbus.ObjectPath("/org/freedesktop/login1")
	managerIfc  = "org.freedesktop.login1.Manager"
	sessionIfc  = "org.freedesktop.login1.Session"
	userIfc     = "org.freedesktop.login1.User"
	propsIfc    = "org.freedesktop.DBus.Properties"
	logindPoll  = 30 * time.Second
	logindCallT = 5 * time.Second
)

// Logind reads the user's session IdleHint/IdleSinceHint from
// systemd-logind over D-Bus. The desktop (GNOME, KDE, … on Wayland or X11)
// sets the hint when the user stops typing and moving the mouse; logind
// announces each change with PropertiesChanged, so the scheduler hears of it
// at once. A poll every 30 s covers desktops that set the hint silently.
type Logind struct {
	conn     *dbus.Conn
	path     dbus.ObjectPath
	id, kind string

	mu    sync.Mutex
	hint  bool
	since time.Time
	err   error

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// DialLogind connects to logind on the system bus (busAddress "" ) or on the
// bus at busAddress (tests), finds the caller's session and subscribes to
// its changes.
func DialLogind(ctx context.Context, busAddress string) (*Logind, error) {
	var conn *dbus.Conn
	var err error
	if busAddress == "" {
		conn, err = dbus.ConnectSystemBus(dbus.WithContext(ctx))
	} else {
		conn, err = dbus.Connect(busAddress, dbus.WithContext(ctx))
	}
	if err != nil {
		return nil, fmt.Errorf("logind: connect to the system bus: %w", err)
	}
	l := &Logind{conn: conn, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if err := l.resolve(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	if err := l.refresh(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchObjectPath(l.path), dbus.WithMatchInterface(propsIfc), dbus.WithMatchMember("PropertiesChanged")); err != nil {
		conn.Close()
		return nil, fmt.Errorf("logind: subscribe to %s: %w", l.path, err)
	}
	signals := make(chan *dbus.Signal, 16)
	conn.Signal(signals)
	go l.loop(signals)
	return l, nil
}

// resolve finds the session: the caller's own ("auto": its session, or the
// display session of its user), else the display session of the user.
func (l *Logind) resolve(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, logindCallT)
	defer cancel()
	mgr := l.conn.Object(login1, login1Path)
	var id string
	if v, err := l.conn.Object(login1, login1Path+"/session/auto").GetProperty(sessionIfc + ".Id"); err == nil {
		id, _ = v.Value().(string)
	}
	if id == "" {
		var user dbus.ObjectPath
		if err := mgr.CallWithContext(ctx, managerIfc+".GetUser", 0, uint32(os.Getuid())).Store(&user); err != nil {
			return fmt.Errorf("logind: no session for this user: %w", err)
		}
		v, err := l.conn.Object(login1, user).GetProperty(userIfc + ".Display")
		if err != nil {
			return fmt.Errorf("logind: read the user's display session: %w", err)
		}
		if disp, ok := v.Value().([]any); ok && len(disp) == 2 {
			id, _ = disp[0].(string)
		}
		if id == "" {
			return errors.New("logind: this user has no graphical session")
		}
	}
	// Signals are sent on the session's own path, not on the "auto" alias.
	if err := mgr.CallWithContext(ctx, managerIfc+".GetSession", 0, id).Store(&l.path); err != nil {
		return fmt.Errorf("logind: session %s: %w", id, err)
	}
	l.id = id
	if v, err := l.conn.Object(login1, l.path).GetProperty(sessionIfc + ".Type"); err == nil {
		l.kind, _ = v.Value().(string)
	}
	return nil
}

func (l *Logind) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, logindCallT)
	defer cancel()
	var props map[string]dbus.Variant
	err := l.conn.Object(login1, l.path).CallWithContext(ctx, propsIfc+".GetAll", 0, sessionIfc).Store(&props)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.err = fmt.Errorf("logind: read session %s: %w", l.id, err)
		return l.err
	}
	hint, ok := props["IdleHint"].Value().(bool)
	if !ok {
		l.err = fmt.Errorf("logind: session %s has no IdleHint", l.id)
		return l.err
	}
	l.hint, l.err = hint, nil
	l.since = time.Time{}
	if us, ok := props["IdleSinceHint"].Value().(uint64); ok && us > 0 {
		l.since = time.UnixMicro(int64(us))
	}
	return nil
}

func (l *Logind) loop(signals chan *dbus.Signal) {
	defer close(l.done)
	t := time.NewTicker(logindPoll)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case sig, ok := <-signals:
			if !ok {
				return
			}
			if sig.Path != l.path {
				continue
			}
		case <-t.C:
		}
		before, _ := l.state()
		_ = l.refresh(context.Background())
		if after, _ := l.state(); after != before {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (l *Logind) state() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.hint, l.since.UnixMicro()), l.err
}

// Name implements Detector.
func (l *Logind) Name() string {
	if l.kind != "" {
		return fmt.Sprintf("logind session %s (%s)", l.id, l.kind)
	}
	return "logind session " + l.id
}

// Idle implements Detector: 0 while the hint is false, else the time since
// IdleSinceHint.
func (l *Logind) Idle(now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, false
	}
	if !l.hint {
		return 0, true
	}
	if l.since.IsZero() || now.Before(l.since) {
		return 0, true
	}
	return now.Sub(l.since), true
}

// Wake implements Detector.
func (l *Logind) Wake() <-chan struct{} { return l.wake }

// Close implements Detector.
func (l *Logind) Close() error {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	err := l.conn.Close()
	<-l.done
	return err
}
