//go:build windows

package idle

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	user32               = windows.NewLazySystemDLL("user32.dll")
	kernel32             = windows.NewLazySystemDLL("kernel32.dll")
	procGetLastInputInfo = user32.NewProc("GetLastInputInfo")
	procGetTickCount     = kernel32.NewProc("GetTickCount")
)

// lastInputInfo is Win32's LASTINPUTINFO.
type lastInputInfo struct {
	size uint32
	time uint32 // tick count (ms since boot) of the last input
}

// newLastInput polls GetLastInputInfo: the tick count of the last keyboard
// or mouse input of this session, against GetTickCount (both 32-bit
// milliseconds, so the difference survives their wrap after 49.7 days).
func newLastInput(interval time.Duration) (Detector, error) {
	if err := procGetLastInputInfo.Find(); err != nil {
		return nil, fmt.Errorf("windows: GetLastInputInfo: %w", err)
	}
	p := newPoller("windows GetLastInputInfo", interval, func() (time.Duration, error) {
		info := lastInputInfo{size: uint32(unsafe.Sizeof(lastInputInfo{}))}
		if ok, _, err := procGetLastInputInfo.Call(uintptr(unsafe.Pointer(&info))); ok == 0 {
			return 0, fmt.Errorf("windows: GetLastInputInfo: %w", err)
		}
		now, _, _ := procGetTickCount.Call()
		return time.Duration(uint32(now)-info.time) * time.Millisecond, nil
	}, nil)
	if err := p.Err(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}
