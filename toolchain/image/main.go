// Command oci-image assembles an OCI image from layer tarballs with go-containerregistry, without a Docker
// engine, and writes it as an OCI image layout and as an archive that `ctr images import` accepts.
//
//	oci-image --out-layout DIR [--out-archive FILE] [--base DIR] [--layer TAR]... --name REF [--name REF]...
//	          [--entrypoint JSON] [--cmd JSON] [--env K=V]... [--user U] [--workdir DIR]
package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	outLayout, outArchive, base, entrypoint, cmd, user, workdir string
	layers, names, env                                          list
}

func main() {
	var o options
	flag.StringVar(&o.outLayout, "out-layout", "", "directory for the OCI image layout (replaced)")
	flag.StringVar(&o.outArchive, "out-archive", "", "tar file of the layout, for ctr images import")
	flag.StringVar(&o.base, "base", "", "OCI image layout whose first image is the base")
	flag.Var(&o.layers, "layer", "layer tarball (uncompressed or gzip), in order")
	flag.Var(&o.names, "name", "image reference, e.g. registry.k8s.io/pause:3.10.1 (repeatable)")
	flag.StringVar(&o.entrypoint, "entrypoint", "", "JSON array")
	flag.StringVar(&o.cmd, "cmd", "", "JSON array")
	flag.Var(&o.env, "env", "K=V (repeatable)")
	flag.StringVar(&o.user, "user", "", "user[:group] the image runs as")
	flag.StringVar(&o.workdir, "workdir", "", "working directory")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "oci-image:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.outLayout == "" || len(o.names) == 0 {
		return errors.New("--out-layout and at least one --name are required")
	}
	img, err := baseImage(o.base)
	if err != nil {
		return err
	}
	for _, path := range o.layers {
		layer, err := tarball.LayerFromFile(path, tarball.WithCompressionLevel(gzip.BestSpeed),
			tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return fmt.Errorf("layer %s: %w", path, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return fmt.Errorf("layer %s: %w", path, err)
		}
	}
	if img, err = configure(img, o); err != nil {
		return err
	}
	if err := os.RemoveAll(o.outLayout); err != nil {
		return err
	}
	dir, err := layout.Write(o.outLayout, empty.Index)
	if err != nil {
		return err
	}
	for _, name := range o.names {
		annotations := map[string]string{
			"io.containerd.image.name":          name,
			"org.opencontainers.image.ref.name": tagOf(name),
		}
		if err := dir.AppendImage(img, layout.WithAnnotations(annotations)); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	size, err := imageSize(img)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %d bytes compressed\n", strings.Join(o.names, ","), digest, size)
	if o.outArchive != "" {
		return archive(o.outLayout, o.outArchive)
	}
	return nil
}

func baseImage(dir string) (v1.Image, error) {
	if dir == "" {
		return mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1), nil
	}
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("base %s: %w", dir, err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(manifest.Manifests) == 0 {
		return nil, fmt.Errorf("base %s holds no image", dir)
	}
	return index.Image(manifest.Manifests[0].Digest)
}

func configure(img v1.Image, o options) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	// A fixed creation time keeps the digest a function of the inputs alone.
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	if o.entrypoint != "" {
		if err := json.Unmarshal([]byte(o.entrypoint), &cf.Config.Entrypoint); err != nil {
			return nil, fmt.Errorf("--entrypoint: %w", err)
		}
	}
	if o.cmd != "" {
		if err := json.Unmarshal([]byte(o.cmd), &cf.Config.Cmd); err != nil {
			return nil, fmt.Errorf("--cmd: %w", err)
		}
	}
	if len(o.env) > 0 {
		cf.Config.Env = append(cf.Config.Env, o.env...)
	}
	if o.user != "" {
		cf.Config.User = o.user
	}
	if o.workdir != "" {
		cf.Config.WorkingDir = o.workdir
	}
	return mutate.ConfigFile(img, cf)
}

// tagOf returns what follows the last ':' of the reference's last path element ("latest" when absent).
func tagOf(ref string) string {
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		return last[i+1:]
	}
	return "latest"
}

func imageSize(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}

// archive writes the layout directory as a tar file with fixed owners and times.
func archive(dir, out string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, path := range paths {
		if err := addFile(tw, dir, path); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func addFile(tw *tar.Writer, dir, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	hdr, err := tar.FileInfoHeader(info, "")
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return err
	}
	hdr.Name = filepath.ToSlash(rel)
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
	hdr.ModTime = time.Unix(0, 0)
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if info.IsDir() {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(tw, src)
	return err
}
