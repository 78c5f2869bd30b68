package deploy

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// nonroot is distroless's nonroot user (uid:gid 65532), the user of .ko.yaml's base image.
const nonroot = "65532:65532"

// TestKoBuildsAStaticNonRootImageWithoutDocker runs `ko build ./cmd/bankml` (the pinned ko, deploy/.ko.yaml)
// against an in-memory registry: the base is an empty image with distroless's nonroot user, standing in
// for gcr.io/distroless/static-debian12:nonroot (no network here). It checks the pushed image: the user is
// non-root, the entrypoint is ko's /ko-app/bankml, the binary is statically linked (no ELF interpreter, no
// shared libraries) and runs (`bankml version`), and $BANKML_MODELS is not baked in (models come from a
// volume, as the chart mounts it).
func TestKoBuildsAStaticNonRootImageWithoutDocker(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux/amd64; its binary is run here")
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	baseRef, err := name.ParseReference(host+"/distroless/static:nonroot", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.Config(empty.Image, v1.Config{User: nonroot, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if base, err = mutate.ConfigFile(base, &v1.ConfigFile{OS: "linux", Architecture: "amd64", Config: v1.Config{User: nonroot}}); err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(baseRef, base); err != nil {
		t.Fatal(err)
	}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := filepath.Abs(".ko.yaml")
	cmd := exec.Command(tool(t, "ko"), "build", "./cmd/bankml", "--bare", "--insecure-registry", "--platform", "linux/amd64", "--sbom", "none")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"KO_DOCKER_REPO="+host+"/bankml",
		"KO_DEFAULTBASEIMAGE="+baseRef.String(),
		"KO_CONFIG_PATH="+cfg,
		"KOCACHE="+t.TempDir(),
	)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ko build: %v\n%s", err, errb.String())
	}
	ref, err := name.ParseReference(strings.TrimSpace(out.String()), name.Insecure)
	if err != nil {
		t.Fatalf("ko printed %q: %v", out.String(), err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != nonroot || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/ko-app/bankml" || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Fatalf("image config: user %q, entrypoint %q, %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	for _, e := range cf.Config.Env {
		if strings.HasPrefix(e, "BANKML_MODELS=") {
			t.Fatalf("the image bakes in %s", e)
		}
	}
	bin := extract(t, img, "ko-app/bankml")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary has an ELF interpreter: it is dynamically linked")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
		t.Fatalf("the binary needs shared libraries %v", libs)
	}
	v, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !bytes.HasPrefix(v, []byte("bankml ")) {
		t.Fatalf("bankml version from the image: %v %s", err, v)
	}
	t.Logf("ko pushed %s: user %s, entrypoint %v, static; %s", ref, cf.Config.User, cf.Config.Entrypoint, bytes.TrimSpace(v))
}

// extract writes the file at path (as the image's flattened file system has it) into a temporary folder.
func extract(t *testing.T, img v1.Image, path string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("no %s in the image", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "/") != path {
			continue
		}
		dst := filepath.Join(t.TempDir(), filepath.Base(path))
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return dst
	}
}
