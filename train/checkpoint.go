package train

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// ckptMagic opens a checkpoint: "BMLCKPT1", a little-endian uint32 header length, the JSON header, then for every
// tensor in header order its W, M and V as little-endian float32.
const ckptMagic = "BMLCKPT1"

type ckptTensor struct {
	Name       string `json:"name"`
	Rows, Cols int
	Matrix     bool `json:"matrix"`
	Mode       Mode `json:"mode"`
	Decay      bool `json:"decay"`
}

type ckptHeader struct {
	Config  Config       `json:"config"`
	Options Options      `json:"options"`
	Step    int          `json:"step"`
	Seconds float64      `json:"seconds"`
	History []Record     `json:"history"`
	Tensors []ckptTensor `json:"tensors"`
}

// SaveCheckpoint writes the trainer's whole state (config, options, step, loss history, every weight and AdamW
// moment) to path, through a temporary file renamed into place, so a crash never leaves half a checkpoint. A run
// resumed from it takes the same steps, bit for bit, as one that never stopped.
func (tr *Trainer) SaveCheckpoint(path string) error {
	h := ckptHeader{Config: tr.Model.Cfg, Options: tr.Opt, Step: tr.Step, Seconds: tr.seconds, History: tr.History}
	for _, t := range tr.Model.Tensors {
		h.Tensors = append(h.Tensors, ckptTensor{t.Name, t.Rows, t.Cols, t.Matrix, t.Mode, t.Decay})
	}
	js, err := json.Marshal(h)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ckpt-*")
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	w.WriteString(ckptMagic)
	binary.Write(w, binary.LittleEndian, uint32(len(js)))
	w.Write(js)
	buf := make([]byte, 4)
	for _, t := range tr.Model.Tensors {
		for _, s := range [][]float32{t.W, t.M, t.V} {
			for _, v := range s {
				binary.LittleEndian.PutUint32(buf, math.Float32bits(v))
				w.Write(buf)
			}
		}
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// LoadCheckpoint reads a checkpoint of SaveCheckpoint into a new model and returns it with the options, step and
// history it was saved with (Trainer.Resume puts them back).
func LoadCheckpoint(path string) (*Model, *Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("train: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(ckptMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != ckptMagic {
		return nil, nil, fmt.Errorf("train: %s is not a bankml checkpoint (want the %q header)", path, ckptMagic)
	}
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil || n > 1<<30 {
		return nil, nil, fmt.Errorf("train: %s: a malformed header length", path)
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(r, js); err != nil {
		return nil, nil, fmt.Errorf("train: %s: %w", path, err)
	}
	var h ckptHeader
	if err := json.Unmarshal(js, &h); err != nil {
		return nil, nil, fmt.Errorf("train: %s: header: %w", path, err)
	}
	cfg := h.Config
	m, err := NewModel(cfg, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("train: %s: %w", path, err)
	}
	if len(h.Tensors) != len(m.Tensors) {
		return nil, nil, fmt.Errorf("train: %s: %d tensors, the config has %d", path, len(h.Tensors), len(m.Tensors))
	}
	buf := make([]byte, 4)
	for i, ht := range h.Tensors {
		t := m.Tensors[i]
		if ht.Name != t.Name || ht.Rows != t.Rows || ht.Cols != t.Cols {
			return nil, nil, fmt.Errorf("train: %s: tensor %d is %s %dx%d, the config has %s %dx%d", path, i, ht.Name, ht.Rows, ht.Cols, t.Name, t.Rows, t.Cols)
		}
		t.Decay = ht.Decay
		m.SetMode(func(name string) bool { return name == t.Name }, ht.Mode)
		for _, s := range [][]float32{t.W, t.M, t.V} {
			for j := range s {
				if _, err := io.ReadFull(r, buf); err != nil {
					return nil, nil, fmt.Errorf("train: %s: %s: %w", path, t.Name, err)
				}
				s[j] = math.Float32frombits(binary.LittleEndian.Uint32(buf))
			}
		}
	}
	if _, err := r.ReadByte(); err != io.EOF {
		return nil, nil, fmt.Errorf("train: %s: bytes after the last tensor", path)
	}
	return m, &Checkpoint{Options: h.Options, Step: h.Step, Seconds: h.Seconds, History: h.History}, nil
}

// Checkpoint is the trainer state LoadCheckpoint returns besides the model.
type Checkpoint struct {
	Options Options
	Step    int
	Seconds float64
	History []Record
}

// Resume puts a checkpoint's step, history and wall time back into a trainer made over its model.
func (tr *Trainer) Resume(c *Checkpoint) error {
	if c.Step > tr.Opt.Steps {
		return fmt.Errorf("train: the checkpoint is at step %d, past the run's %d steps", c.Step, tr.Opt.Steps)
	}
	if len(c.History) != c.Step {
		return errors.New("train: the checkpoint's history does not match its step")
	}
	tr.Step, tr.History, tr.seconds = c.Step, c.History, c.Seconds
	return nil
}
