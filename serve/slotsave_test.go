package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSlotActions: POST /slots/{id}?action=save|erase|restore answers llama-server's bodies
// (server_task_result_slot_save_load, server_task_result_slot_erase); after a restore the same
// /completion skips its prompt (timings.cache_n: all but the last token) and answers as before; GET /slots
// reports each slot and its last request.
func TestSlotActions(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Parallel: 2, SlotSavePath: dir})
	// A prompt of 64 tokens or more: its cells are the ones settling gives a longer prompt's too, so the
	// slot's idle settling keeps them.
	prompt := strings.Repeat("Once upon a time, there was a little dog. ", 8)
	completion := func() map[string]any {
		t.Helper()
		st, b := ts.post(t, "/completion", mustJSON(t, map[string]any{"prompt": prompt, "n_predict": 8, "seed": 3, "id_slot": 1}))
		if st != 200 {
			t.Fatalf("completion: %d %s", st, b)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	action := func(path, body string, want int) map[string]any {
		t.Helper()
		st, b := ts.post(t, path, []byte(body))
		if st != want {
			t.Fatalf("%s %s: %d %s, want %d", path, body, st, b, want)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
		return v
	}
	first := completion()
	nPrompt := first["timings"].(map[string]any)["prompt_n"].(float64)
	saved := action("/slots/1?action=save", `{"filename": "dog.bin"}`, 200)
	if saved["id_slot"] != 1.0 || saved["filename"] != "dog.bin" || saved["n_saved"].(float64) < nPrompt || saved["n_written"].(float64) <= 0 || saved["timings"].(map[string]any)["save_ms"] == nil {
		t.Fatalf("save: %v", saved)
	}
	erased := action("/slots/1?action=erase", ``, 200)
	if erased["id_slot"] != 1.0 || erased["n_erased"] != saved["n_saved"] {
		t.Fatalf("erase: %v (saved %v)", erased, saved["n_saved"])
	}
	restored := action("/slots/1?action=restore", `{"filename": "dog.bin"}`, 200)
	if restored["n_restored"] != saved["n_saved"] || restored["n_read"] != saved["n_written"] || restored["timings"].(map[string]any)["restore_ms"] == nil {
		t.Fatalf("restore: %v (saved %v)", restored, saved)
	}
	again := completion()
	if again["content"] != first["content"] || again["timings"].(map[string]any)["cache_n"] != nPrompt-1 {
		t.Errorf("after the restore: %q cache_n %v; first %q, want cache_n %v", again["content"], again["timings"].(map[string]any)["cache_n"], first["content"], nPrompt-1)
	}
	st, b := ts.get(t, "/slots")
	var slots []map[string]any
	if err := json.Unmarshal(b, &slots); st != 200 || err != nil || len(slots) != 2 {
		t.Fatalf("GET /slots: %d %s", st, b)
	}
	if s := slots[1]; s["id"] != 1.0 || s["is_processing"] != false || s["n_prompt_tokens"] != nPrompt || s["n_prompt_tokens_cache"] != nPrompt-1 ||
		s["params"].(map[string]any)["seed"] != 3.0 || !strings.HasPrefix(s["prompt"].(string), "<s>") {
		t.Errorf("GET /slots: slot 1 %v", s)
	}
	if _, ok := slots[0]["id_task"]; ok || slots[0]["n_ctx"] == nil {
		t.Errorf("GET /slots: the unused slot 0 %v", slots[0])
	}
}

// TestSlotActionErrors: llama-server's error bodies for slot actions: 501 without --slot-save-path, 400
// "Invalid slot ID" (unreadable; TestSlotActionIDWrapsAround has the numbers), "Invalid action", "Invalid filename" (a path, "..",
// a trailing dot), and "Unable to restore slot: …" for a damaged file or a missing one.
func TestSlotActionErrors(t *testing.T) {
	dir := t.TempDir()
	none := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{})
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{SlotSavePath: dir})
	if st, b := ts.post(t, "/slots/0?action=save", []byte(`{"filename": "a.bin"}`)); st != 200 {
		t.Fatalf("save: %d %s", st, b)
	}
	data, err := os.ReadFile(filepath.Join(dir, "a.bin"))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if err := os.WriteFile(filepath.Join(dir, "bad.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ts         *testServer
		path, body string
		status     int
		typ, msg   string
	}{
		{none, "/slots/0?action=save", `{"filename": "a.bin"}`, 501, TypeNotSupported, "This server does not support slots action. Start it with `--slot-save-path`"},
		{ts, "/slots/x?action=save", `{"filename": "a.bin"}`, 400, TypeInvalidRequest, "Invalid slot ID"},
		{ts, "/slots/0?action=bogus", `{}`, 400, TypeInvalidRequest, "Invalid action"},
		{ts, "/slots/0?action=save", `{"filename": "../a.bin"}`, 400, TypeInvalidRequest, "Invalid filename"},
		{ts, "/slots/0?action=save", `{"filename": "a."}`, 400, TypeInvalidRequest, "Invalid filename"},
		{ts, "/slots/0?action=restore", `{"filename": "bad.bin"}`, 400, TypeInvalidRequest, "Unable to restore slot: "},
		{ts, "/slots/0?action=restore", `{"filename": "missing.bin"}`, 400, TypeInvalidRequest, "Unable to restore slot: "},
	}
	for _, c := range cases {
		st, b := c.ts.post(t, c.path, []byte(c.body))
		var v errorBody
		if err := json.Unmarshal(b, &v); err != nil || st != c.status || v.Error.Code != c.status || v.Error.Type != c.typ || !strings.HasPrefix(v.Error.Message, c.msg) {
			t.Errorf("%s %s: %d %s; want %d %s %q", c.path, c.body, st, b, c.status, c.typ, c.msg)
		}
		if strings.Contains(v.Error.Message, dir) { // a server path is the operator's, not the client's
			t.Errorf("%s %s: %q names --slot-save-path's folder", c.path, c.body, v.Error.Message)
		}
	}
}

// TestSlotActionIDWrapsAround: a slot action's id is llama-server's get_slot_by_id(id): `id % slots.size()`
// ("allow id_slot to be out of bounds"), the int converted to size_t, so an id past the slots wraps around
// and a negative one counts from 2^64 (the slots below are g++'s for those expressions); the answer names
// the id given, and the path is decoded first (cpp-httplib): %2B1 is +1. Each case runs after an answer on
// slot 1 (slot 0 stays empty).
func TestSlotActionIDWrapsAround(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Parallel: 2, SlotSavePath: t.TempDir()})
	cases := []struct {
		name    string
		path    string
		status  int
		idSlot  float64
		erased  bool
		message string
	}{
		{"id 2 of 2 slots is slot 0, which holds nothing", "/slots/2?action=erase", 200, 2, false, ""},
		{"id 3 of 2 slots is slot 1, which holds the answer", "/slots/3?action=erase", 200, 3, true, ""},
		{"id -2 of 2 slots is slot 0", "/slots/-2?action=erase", 200, -2, false, ""},
		{"id -1 of 2 slots is slot 1", "/slots/-1?action=erase", 200, -1, true, ""},
		{"id -3 of 2 slots is slot 1", "/slots/-3?action=erase", 200, -3, true, ""},
		{"id -2147483648 of 2 slots is slot 0", "/slots/-2147483648?action=erase", 200, -2147483648, false, ""},
		{"id %2B1 is +1, slot 1", "/slots/%2B1?action=erase", 200, 1, true, ""},
		{"id 2147483648 is past an int", "/slots/2147483648?action=erase", 400, 0, false, "Invalid slot ID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if st, b := ts.post(t, "/completion", mustJSON(t, map[string]any{"prompt": "Once upon a time", "n_predict": 4, "id_slot": 1})); st != 200 {
				t.Fatalf("completion: %d %s", st, b)
			}
			body := ``
			if strings.Contains(c.path, "save") {
				body = `{"filename": "a.bin"}`
			}
			st, b := ts.post(t, c.path, []byte(body))
			var v struct {
				IDSlot  *float64 `json:"id_slot"`
				NErased float64  `json:"n_erased"`
				Error   struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &v); err != nil || st != c.status {
				t.Fatalf("%d %s; want %d", st, b, c.status)
			}
			if c.status != 200 {
				if v.Error.Message != c.message {
					t.Errorf("%s; want %q", b, c.message)
				}
				return
			}
			if v.IDSlot == nil || *v.IDSlot != c.idSlot || (v.NErased > 0) != c.erased {
				t.Errorf("%s; want id_slot %v, tokens erased: %v", b, c.idSlot, c.erased)
			}
		})
	}
}

// TestOnePoolPerServer: serve -np 4 -t 2 runs 2 matmul workers shared by its 4 slots, as llama-server's one
// batch does.
func TestOnePoolPerServer(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Parallel: 4, Threads: 2, NCtx: 1024})
	if n := ts.eng.Workers(); n != 2 || len(ts.eng.Slots()) != 4 {
		t.Fatalf("%d workers for %d slots; want 2 for 4", n, len(ts.eng.Slots()))
	}
}

// TestCompletionIDSlotWrapsAround: /completion's id_slot other than -1 is get_slot_by_id's (see
// TestSlotActionIDWrapsAround): an id past the slots wraps around, a negative one counts from 2^64, and the
// answer names the slot that ran it; -1 takes any; llama-server refuses none of them.
func TestCompletionIDSlotWrapsAround(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Parallel: 2})
	cases := []struct {
		name   string
		idSlot int
		want   []float64 // the slots that may run it
	}{
		{"id_slot 3 of 2 slots runs on slot 1", 3, []float64{1}},
		{"id_slot 2 of 2 slots runs on slot 0", 2, []float64{0}},
		{"id_slot -2 of 2 slots runs on slot 0", -2, []float64{0}},
		{"id_slot -3 of 2 slots runs on slot 1", -3, []float64{1}},
		{"id_slot -1 runs on either slot", -1, []float64{0, 1}},
		{"id_slot 4294967297 is an int's 1 and runs on slot 1", 4294967297, []float64{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := ts.post(t, "/completion", mustJSON(t, map[string]any{"prompt": "Once upon a time", "n_predict": 2, "id_slot": c.idSlot}))
			var v struct {
				IDSlot float64 `json:"id_slot"`
			}
			if err := json.Unmarshal(b, &v); err != nil || st != 200 || !slices.Contains(c.want, v.IDSlot) {
				t.Errorf("%d %s; want 200 on slot %v", st, b, c.want)
			}
		})
	}
}
