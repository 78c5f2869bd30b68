package main

import (
	"testing"
	"time"
)

// TestKeepAliveReadsDurationsAndOllamasWholeSeconds: --keep-alive takes a Go duration or, as Ollama's
// OLLAMA_KEEP_ALIVE, whole seconds; anything else is refused naming the value.
func TestKeepAliveReadsDurationsAndOllamasWholeSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10m", 10 * time.Minute, true},
		{"-1s", -time.Second, true},
		{"0", 0, true},
		{"-1", -time.Second, true},
		{"300", 300 * time.Second, true},
		{"abc", 0, false},
		{"1.5", 0, false},
		{"99999999999999999999", 0, false},
	} {
		var k keepAlive
		err := k.UnmarshalText([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && time.Duration(k) != tc.want) {
			t.Errorf("%q: %v, %v; want %v (ok %v)", tc.in, time.Duration(k), err, tc.want, tc.ok)
		}
	}
}
