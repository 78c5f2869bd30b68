package serve

import (
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/bankml/bankml/engine"
)

// handleSlots is llama-server's GET /slots (get_slots, server_slot::to_json): per slot its id, n_ctx,
// speculative (false), is_processing and, once a request ran there, the request: id_task, n_prompt_tokens,
// n_prompt_tokens_processed, n_prompt_tokens_cache, params (task_params::to_json(true)'s fields, the
// /props set: bankml has no grammar triggers or preserved tokens to list), next_token, prompt (the prompt's
// tokens rendered with special tokens) and generated (the pieces generated so far). ?fail_on_no_slot with
// every slot busy is 503 "no slot available". With Options.NoSlots (--no-slots) it is llama-server's 501.
func (s *Server) handleSlots(w http.ResponseWriter, r *http.Request) {
	if s.opt.NoSlots {
		writeError(w, &APIError{Type: TypeNotSupported, Message: "This server does not support slots endpoint. Start it with `--slots`"})
		return
	}
	info := s.eng.Slots()
	idle := 0
	out := make([]map[string]any, len(info))
	for i, si := range info {
		if !si.Busy {
			idle++
		}
		o := map[string]any{"id": si.ID, "n_ctx": s.nCtx(), "speculative": false, "is_processing": si.Busy}
		if t := si.Task; t != nil {
			remain := -1
			if t.NPredict >= 0 {
				remain = max(0, t.NPredict-t.Decoded)
			}
			o["id_task"] = t.ID
			o["n_prompt_tokens"] = t.PromptTokens
			o["n_prompt_tokens_processed"] = t.PromptProcessed
			o["n_prompt_tokens_cache"] = t.PromptCached
			o["params"] = settingsJSON(t.Sampling, requestSettings{NPredict: t.NPredict, IgnoreEOS: t.IgnoreEOS, PostSamplingProbs: t.PostSamplingProbs})
			o["next_token"] = []any{map[string]any{
				"has_next_token": t.HasNext, "has_new_line": strings.Contains(t.Generated, "\n"),
				"n_remain": remain, "n_decoded": t.Decoded,
			}}
			o["prompt"] = t.Prompt
			o["generated"] = t.Generated
		}
		out[i] = o
	}
	if r.URL.Query().Has("fail_on_no_slot") && r.URL.Query().Get("fail_on_no_slot") != "" && idle == 0 {
		writeError(w, &APIError{Type: TypeUnavailable, Message: "no slot available"})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// slotActionRequest is the body of POST /slots/{id}?action=save|restore.
type slotActionRequest struct {
	Filename *string `json:"filename"`
}

// handleSlotAction is llama-server's POST /slots/{id_slot}?action=save|restore|erase (post_slots,
// handle_slots_save/restore/erase): without --slot-save-path 501 "This server does not support slots
// action. Start it with `--slot-save-path`"; an id that std::stoi cannot read 400 "Invalid slot ID"; an id
// past the slots wraps around as get_slot_by_id wraps it (id % n_slots, C++'s remainder, the answer naming
// the id given, negative ids too (slotByID); another action 400 "Invalid action"; a filename that fs_validate_filename refuses 400
// "Invalid filename". save answers {id_slot, filename, n_saved, n_written, timings: {save_ms}}, restore
// {id_slot, filename, n_restored, n_read, timings: {restore_ms}}, erase {id_slot, n_erased}, each waiting
// while the slot is busy. A refused restore (a file damaged, from another model, missing, too long) is 400
// "Unable to restore slot: " and the reason, and leaves the slot empty; a failed save 500 "Unable to save
// slot". The body must be a JSON object with "filename" (400 naming the problem otherwise; llama-server
// answers its parser's exception as a 500).
func (s *Server) handleSlotAction(w http.ResponseWriter, r *http.Request) {
	if s.opt.SlotSavePath == "" {
		writeError(w, &APIError{Type: TypeNotSupported, Message: "This server does not support slots action. Start it with `--slot-save-path`"})
		return
	}
	raw := chi.URLParam(r, "id_slot")
	if u, err := url.PathUnescape(raw); err == nil {
		raw = u // cpp-httplib decodes the path before matching it: /slots/%2B1 is id +1
	}
	id, ok := stoi(raw)
	if !ok {
		writeError(w, badRequest("Invalid slot ID"))
		return
	}
	slot := slotByID(int32(id), s.opt.Parallel)
	ctx := r.Context()
	action := r.URL.Query().Get("action")
	if action == "erase" {
		n, err := s.eng.EraseSlot(ctx, slot)
		if err != nil {
			writeError(w, s.slotError(err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id_slot": id, "n_erased": n})
		return
	}
	if action != "save" && action != "restore" {
		writeError(w, badRequest("Invalid action"))
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req slotActionRequest
	if err := decodeJSON(body, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Filename == nil {
		writeError(w, badRequest("filename: missing (the slot file's name in --slot-save-path)"))
		return
	}
	name := *req.Filename
	if !validFilename(name) {
		writeError(w, badRequest("Invalid filename"))
		return
	}
	path := filepath.Join(s.opt.SlotSavePath, name)
	if action == "save" {
		f, err := s.eng.SaveSlot(ctx, slot, path)
		if err != nil {
			writeError(w, s.slotError(err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id_slot": id, "filename": name, "n_saved": f.Tokens, "n_written": f.Bytes,
			"timings": map[string]any{"save_ms": f.MS}})
		return
	}
	f, err := s.eng.RestoreSlot(ctx, slot, path)
	if err != nil {
		writeError(w, s.slotError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id_slot": id, "filename": name, "n_restored": f.Tokens, "n_read": f.Bytes,
		"timings": map[string]any{"restore_ms": f.MS}})
}

// slotError is the error body of a slot action's engine error; the reason names the file by its name in
// --slot-save-path, never by the server's path.
func (s *Server) slotError(err error) error {
	var re *engine.RestoreError
	var se *engine.SaveError
	switch {
	case errors.Is(err, engine.ErrInvalidSlot):
		return badRequest("Invalid slot ID")
	case errors.As(err, &re):
		msg := re.Error()
		if dir := s.opt.SlotSavePath; dir != "" {
			dir = filepath.Clean(dir)
			msg = strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
			msg = strings.ReplaceAll(msg, dir, "--slot-save-path")
		}
		return badRequest("%s", msg)
	case errors.As(err, &se):
		return &APIError{Type: TypeServer, Message: "Unable to save slot"}
	}
	return err
}

// slotByID is llama-server's get_slot_by_id(id_slot) for n slots: `id_slot % slots.size()`, the int
// converted to size_t first, so every id names a slot: one past the slots wraps around, and a negative one
// counts from 2^64 (-1 of 2 slots is slot 1, -1 of 3 is slot 0).
func slotByID(id int32, n int) int { return int(uint64(int64(id)) % uint64(n)) }

// stoi is std::stoi on s as post_slots reads id_slot: leading white space, an optional sign, at least one
// digit, anything after the digits ignored; ok is false when no digit starts it or the value leaves int32.
func stoi(s string) (int, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	digits := end
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == digits {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:end], 10, 32)
	return int(n), err == nil
}

// validFilename is common/common.cpp's fs_validate_filename(name, false): 1 to 255 bytes of valid,
// shortest-form UTF-8 without control characters, the Unicode look-alikes of '.', '/' and '\', surrogates,
// U+FFFD, the BOM, any of / \ : * ? " < > |, a leading or trailing space, a trailing '.', "..", or being ".".
func validFilename(name string) bool {
	if name == "" || len(name) > 255 || !utf8.ValidString(name) {
		return false
	}
	for _, c := range name {
		switch {
		case c <= 0x1F, c == 0x7F, c >= 0x80 && c <= 0x9F, c == 0xFF0E, c == 0x2215, c == 0x2216,
			c == 0xFFFD, c == 0xFEFF, strings.ContainsRune(`/\:*?"<>|`, c):
			return false
		}
	}
	return name[0] != ' ' && name[len(name)-1] != ' ' && name[len(name)-1] != '.' && !strings.Contains(name, "..") && name != "."
}
