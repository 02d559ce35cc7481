package procstat

import (
	"os"
	"testing"
)

func TestKBReadsOwnStatus(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	rss, peak := KB(os.Getpid(), "VmRSS"), KB(os.Getpid(), "VmHWM")
	if rss <= 0 || peak < rss {
		t.Fatalf("VmRSS %d VmHWM %d", rss, peak)
	}
	spin := 0
	for start := CPUSeconds(os.Getpid()); CPUSeconds(os.Getpid()) <= start; spin++ {
		if spin > 1e9 {
			t.Fatal("CPU time never moved")
		}
	}
	if KB(os.Getpid(), "NoSuchField") != 0 || KB(-1, "VmRSS") != 0 {
		t.Fatal("missing values must read as 0")
	}
}
