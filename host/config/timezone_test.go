package config

import (
	"strings"
	"testing"
	_ "time/tzdata"
)

func TestSchedulerTimezoneIsValidated(t *testing.T) {
	for _, tc := range []struct {
		tz string
		ok bool
	}{{"", true}, {"local", true}, {"Europe/Berlin", true}, {"America/New_York", true}, {"Mars/Olympus", false}, {"../../etc/passwd", false}} {
		c := Default(t.TempDir())
		c.Scheduler.Timezone = tc.tz
		err := c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.tz, err)
		}
		if err != nil && !strings.Contains(err.Error(), "scheduler.timezone") {
			t.Errorf("%q: error does not name the key: %v", tc.tz, err)
		}
	}
}
