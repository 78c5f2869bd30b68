package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNoSlotsEndpoint: llama-server's --no-slots (common_params.endpoint_slots false, common/arg.cpp) turns
// GET /slots into 501 not_supported_error "This server does not support slots endpoint. Start it with
// `--slots`" (get_slots, tools/server/server-context.cpp), and /props says endpoint_slots: false; the POST
// /slots actions are gated by --slot-save-path only (post_slots), so with it they answer as with the endpoint
// enabled, and without it they are post_slots' own 501, whatever --slots says.
func TestNoSlotsEndpoint(t *testing.T) {
	on := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{SlotSavePath: t.TempDir()})
	off := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{NoSlots: true, SlotSavePath: t.TempDir()})
	offNoPath := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{NoSlots: true})
	const (
		endpointOff = "This server does not support slots endpoint. Start it with `--slots`"
		actionsOff  = "This server does not support slots action. Start it with `--slot-save-path`"
	)
	cases := []struct {
		name         string
		ts           *testServer
		method, path string
		body         string
		status       int
		errType, msg string // the error body's type and message (status >= 400)
		field        string // a field of a 200 answer's object (or "[" for GET /slots' array)
	}{
		{name: "GET /slots with the endpoint enabled lists the slots", ts: on, method: "GET", path: "/slots", status: 200, field: "["},
		{name: "GET /slots with --no-slots is llama-server's 501", ts: off, method: "GET", path: "/slots", status: 501, errType: TypeNotSupported, msg: endpointOff},
		{name: "GET /slots?fail_on_no_slot=1 with --no-slots is the same 501", ts: off, method: "GET", path: "/slots?fail_on_no_slot=1", status: 501, errType: TypeNotSupported, msg: endpointOff},
		{name: "GET /slots with --no-slots and no --slot-save-path is the same 501", ts: offNoPath, method: "GET", path: "/slots", status: 501, errType: TypeNotSupported, msg: endpointOff},
		{name: "a save with the endpoint enabled saves", ts: on, method: "POST", path: "/slots/0?action=save", body: `{"filename": "a.bin"}`, status: 200, field: "n_saved"},
		{name: "a restore with the endpoint enabled restores", ts: on, method: "POST", path: "/slots/0?action=restore", body: `{"filename": "a.bin"}`, status: 200, field: "n_restored"},
		{name: "an erase with the endpoint enabled erases", ts: on, method: "POST", path: "/slots/0?action=erase", status: 200, field: "n_erased"},
		{name: "a save with --no-slots still saves, --slot-save-path alone gating actions", ts: off, method: "POST", path: "/slots/0?action=save", body: `{"filename": "a.bin"}`, status: 200, field: "n_saved"},
		{name: "a restore with --no-slots still restores", ts: off, method: "POST", path: "/slots/0?action=restore", body: `{"filename": "a.bin"}`, status: 200, field: "n_restored"},
		{name: "an erase with --no-slots still erases", ts: off, method: "POST", path: "/slots/0?action=erase", status: 200, field: "n_erased"},
		{name: "an unknown action with --no-slots is still Invalid action", ts: off, method: "POST", path: "/slots/0?action=bogus", body: `{}`, status: 400, errType: TypeInvalidRequest, msg: "Invalid action"},
		{name: "a save with --no-slots and no --slot-save-path is post_slots' 501", ts: offNoPath, method: "POST", path: "/slots/0?action=save", body: `{"filename": "a.bin"}`, status: 501, errType: TypeNotSupported, msg: actionsOff},
		{name: "an erase with --no-slots and no --slot-save-path is post_slots' 501", ts: offNoPath, method: "POST", path: "/slots/0?action=erase", status: 501, errType: TypeNotSupported, msg: actionsOff},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st int
			var b []byte
			if c.method == "GET" {
				st, b = c.ts.get(t, c.path)
			} else {
				st, b = c.ts.post(t, c.path, []byte(c.body))
			}
			if st != c.status {
				t.Fatalf("%d %s; want %d", st, b, c.status)
			}
			if c.status >= 400 {
				var v errorBody
				if err := json.Unmarshal(b, &v); err != nil || v.Error.Code != c.status || v.Error.Type != c.errType || v.Error.Message != c.msg {
					t.Errorf("%s; want code %d, type %s, message %q", b, c.status, c.errType, c.msg)
				}
				return
			}
			if c.field == "[" {
				var slots []map[string]any
				if err := json.Unmarshal(b, &slots); err != nil || len(slots) != 1 || slots[0]["id"] != 0.0 {
					t.Errorf("%s; want one slot, id 0", b)
				}
				return
			}
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil || v[c.field] == nil || v["id_slot"] != 0.0 {
				t.Errorf("%s; want id_slot 0 and %s", b, c.field)
			}
		})
	}
}

// TestPropsEndpointSlots: /props' endpoint_slots is common_params.endpoint_slots (get_res_props): true by
// default (--slots), false with --no-slots.
func TestPropsEndpointSlots(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		want bool
	}{
		{"the default serves /slots and says endpoint_slots true", Options{}, true},
		{"--no-slots says endpoint_slots false", Options{NoSlots: true}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestServer(t, storiesPath(t), AdmitOptions{}, c.o)
			st, b := ts.get(t, "/props")
			var v struct {
				EndpointSlots *bool `json:"endpoint_slots"`
			}
			if err := json.Unmarshal(b, &v); st != 200 || err != nil || v.EndpointSlots == nil || *v.EndpointSlots != c.want {
				t.Errorf("%d %s; want endpoint_slots %v", st, strings.TrimSpace(string(b[:min(len(b), 200)])), c.want)
			}
		})
	}
}
