// The Helm renderer: Helm's own chart loader and template engine, built for
// wasip1 and run by wasmco's sandbox (host/runtime/src/helm.rs).
//
// It is a reactor: the host calls `_initialize`, which runs Go's and Helm's
// package initialisation (the costly part, done before a request comes),
// then `input` for a buffer it copies a JSON request into, then `render`,
// which writes a JSON response to stdout. An instance serves one request,
// so nothing of one chart survives into the next.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"runtime/debug"
	"sort"
	"strings"
	"text/template/parse"
	"unsafe"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
)

type request struct {
	// "inspect" loads and checks the chart; "render" renders it too.
	Op    string `json:"op"`
	Chart []byte `json:"chart"`
	// Values files (YAML), lowest precedence first, as `helm -f`.
	ValueFiles []string `json:"valueFiles"`
	// `--set` strings, applied after the files, in order.
	Set         []string `json:"set"`
	Release     string   `json:"release"`
	Namespace   string   `json:"namespace"`
	KubeVersion string   `json:"kubeVersion"`
}

type metadata struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion,omitempty"`
	Templates  int    `json:"templates"`
	Crds       int    `json:"crds"`
}

type manifest struct {
	Source  string `json:"source"`
	Content string `json:"content"`
}

type hook struct {
	Name           string   `json:"name"`
	Kind           string   `json:"kind"`
	Source         string   `json:"source"`
	Events         []string `json:"events"`
	Weight         int      `json:"weight"`
	DeletePolicies []string `json:"deletePolicies"`
	Content        string   `json:"content"`
}

type response struct {
	Chart     *metadata  `json:"chart,omitempty"`
	Manifests []manifest `json:"manifests"`
	Hooks     []hook     `json:"hooks"`
	// What failed, in Helm's words.
	Error string `json:"error,omitempty"`
	// Which step failed: "request", "load", "values" or "render".
	Stage string `json:"stage,omitempty"`
}

func main() {}

// A template that includes itself without end (through include, template
// or tpl) would grow the stack until the instance's memory runs out, and
// the host could only say that memory ran out. Below that, Go stops with
// "stack overflow", which the host reports naming the templates that can
// recurse (see recursionSuspects).
const maxStack = 64 << 20

func init() {
	debug.SetMaxStack(maxStack)
}

// The request, held here so the collector keeps it where the host wrote it.
var requestBytes []byte

// input makes room for a request of size bytes and answers where it is.
//
//go:wasmexport input
func input(size int32) uint32 {
	if size <= 0 {
		size = 1
	}
	requestBytes = make([]byte, size)
	return uint32(uintptr(unsafe.Pointer(&requestBytes[0])))
}

//go:wasmexport render
func render() {
	var out response
	if err := serve(&out); err != nil {
		out = response{Error: err.Error(), Stage: err.stage}
	}
	if out.Manifests == nil {
		out.Manifests = []manifest{}
	}
	if out.Hooks == nil {
		out.Hooks = []hook{}
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(&out); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return e.err.Error() }

func fail(stage string, err error) *stageError { return &stageError{stage, err} }

func serve(out *response) *stageError {
	var req request
	if err := json.Unmarshal(requestBytes, &req); err != nil {
		return fail("request", err)
	}
	chrt, err := loader.LoadArchive(bytes.NewReader(req.Chart))
	if err != nil {
		return fail("load", err)
	}
	if err := installable(chrt); err != nil {
		return fail("load", err)
	}
	out.Chart = &metadata{
		Name:       chrt.Metadata.Name,
		Version:    chrt.Metadata.Version,
		AppVersion: chrt.Metadata.AppVersion,
		Templates:  len(chrt.Templates),
		Crds:       len(chrt.CRDObjects()),
	}
	if req.Op == "inspect" {
		return nil
	}
	vals, err := mergeValues(req.ValueFiles, req.Set)
	if err != nil {
		return fail("values", err)
	}
	if err := renderChart(chrt, vals, &req, out); err != nil {
		return fail("render", err)
	}
	return nil
}

// installable refuses what `helm install` refuses before rendering: a
// library chart, and dependencies Chart.yaml names that charts/ lacks.
func installable(chrt *chart.Chart) error {
	if t := chrt.Metadata.Type; t != "" && t != "application" {
		return fmt.Errorf("%s charts are not installable", t)
	}
	var missing []string
outer:
	for _, dependency := range chrt.Metadata.Dependencies {
		for _, present := range chrt.Dependencies() {
			if present.Name() == dependency.Name {
				continue outer
			}
		}
		missing = append(missing, dependency.Name)
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s", strings.Join(missing, ", "))
	}
	return nil
}

// mergeValues combines values as `helm install -f … --set …` does.
func mergeValues(files []string, set []string) (map[string]interface{}, error) {
	base := map[string]interface{}{}
	for i, file := range files {
		current, err := chartutil.ReadValues([]byte(file))
		if err != nil {
			return nil, fmt.Errorf("values file %d: %w", i+1, err)
		}
		base = mergeMaps(base, current)
	}
	for _, value := range set {
		if err := strvals.ParseInto(value, base); err != nil {
			return nil, fmt.Errorf("failed parsing --set data: %w", err)
		}
	}
	return base, nil
}

// mergeMaps is the deep merge `helm -f` applies between values files: maps
// merge key by key, anything else in b replaces a's.
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]interface{}); ok {
			if bv, ok := out[k]; ok {
				if bv, ok := bv.(map[string]interface{}); ok {
					out[k] = mergeMaps(bv, v)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// renderChart does what a client-only `helm install --dry-run
// --include-crds` does between loading the chart and printing it.
func renderChart(chrt *chart.Chart, vals map[string]interface{}, req *request, out *response) error {
	if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
		return err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if req.KubeVersion != "" {
		version, err := chartutil.ParseKubeVersion(req.KubeVersion)
		if err != nil {
			return err
		}
		caps.KubeVersion = *version
	}
	namespace := req.Namespace
	if namespace == "" {
		namespace = "default"
	}
	options := chartutil.ReleaseOptions{
		Name:      req.Release,
		Namespace: namespace,
		Revision:  1,
		IsInstall: true,
	}
	values, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals, options, caps, false)
	if err != nil {
		return err
	}
	if want := chrt.Metadata.KubeVersion; want != "" && !chartutil.IsCompatibleRange(want, caps.KubeVersion.String()) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", want, caps.KubeVersion.String())
	}
	if suspects := recursionSuspects(chrt); suspects != "" {
		// Read by the host only if the render then overflows the stack.
		fmt.Fprintf(os.Stderr, "wasmco-recursion: %s\n", suspects)
	}
	var e engine.Engine
	files, err := e.Render(chrt, values)
	if err != nil {
		return err
	}
	for name := range files {
		if path.Base(name) == "NOTES.txt" {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return err
	}
	for _, crd := range chrt.CRDObjects() {
		out.Manifests = append(out.Manifests, manifest{Source: crd.Filename, Content: string(crd.File.Data)})
	}
	for _, m := range manifests {
		out.Manifests = append(out.Manifests, manifest{Source: m.Name, Content: m.Content})
	}
	sort.SliceStable(hooks, func(i, j int) bool {
		if hooks[i].Weight == hooks[j].Weight {
			return hooks[i].Name < hooks[j].Name
		}
		return hooks[i].Weight < hooks[j].Weight
	})
	for _, h := range hooks {
		events := make([]string, 0, len(h.Events))
		for _, event := range h.Events {
			if event == release.HookTest {
				continue
			}
			events = append(events, event.String())
		}
		if len(events) == 0 {
			continue
		}
		policies := make([]string, 0, len(h.DeletePolicies))
		for _, policy := range h.DeletePolicies {
			policies = append(policies, policy.String())
		}
		out.Hooks = append(out.Hooks, hook{
			Name:           h.Name,
			Kind:           h.Kind,
			Source:         h.Path,
			Events:         events,
			Weight:         h.Weight,
			DeletePolicies: policies,
			Content:        h.Manifest,
		})
	}
	return nil
}

// recursionSuspects names the templates of the chart (and its subcharts)
// through which rendering can recurse: a cycle of include or template
// calls with constant names, else the templates that call tpl (whose text
// can render itself again). Empty when there are none.
func recursionSuspects(chrt *chart.Chart) string {
	calls := map[string][]string{}   // template name -> names it includes
	definedIn := map[string]string{} // template name -> its file
	var usesTpl []string
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		for _, t := range c.Templates {
			file := path.Join(c.ChartFullPath(), t.Name)
			// Helm's and Sprig's functions are not known here: only the
			// shape of the calls matters.
			trees := map[string]*parse.Tree{}
			tree := parse.New(file)
			tree.Mode = parse.SkipFuncCheck
			if _, err := tree.Parse(string(t.Data), "", "", trees); err != nil {
				// Helm reports it when it renders.
				continue
			}
			for name, tree := range trees {
				if tree == nil || tree.Root == nil {
					continue
				}
				definedIn[name] = file
				found := templateCalls(tree.Root)
				calls[name] = append(calls[name], found.names...)
				if found.tpl {
					usesTpl = append(usesTpl, file)
				}
			}
		}
		for _, dependency := range c.Dependencies() {
			walk(dependency)
		}
	}
	walk(chrt)
	if cycle := findCycle(calls); len(cycle) > 0 {
		steps := make([]string, len(cycle))
		for i, name := range cycle {
			steps[i] = fmt.Sprintf("%q (%s)", name, definedIn[name])
		}
		return "template " + strings.Join(steps, " includes ")
	}
	if len(usesTpl) > 0 {
		sort.Strings(usesTpl)
		return "tpl, called in " + strings.Join(dedupe(usesTpl), ", ")
	}
	return ""
}

type calls struct {
	names []string
	tpl   bool
}

// templateCalls lists what a parse tree includes by a constant name, and
// whether it calls tpl.
func templateCalls(node parse.Node) calls {
	var out calls
	var visit func(parse.Node)
	visit = func(node parse.Node) {
		switch n := node.(type) {
		case nil:
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, child := range n.Nodes {
				visit(child)
			}
		case *parse.TemplateNode:
			out.names = append(out.names, n.Name)
			visit(n.Pipe)
		case *parse.ActionNode:
			visit(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, cmd := range n.Cmds {
				visit(cmd)
			}
		case *parse.CommandNode:
			if len(n.Args) > 0 {
				if ident, ok := n.Args[0].(*parse.IdentifierNode); ok {
					switch ident.Ident {
					case "include":
						if len(n.Args) > 1 {
							if name, ok := n.Args[1].(*parse.StringNode); ok {
								out.names = append(out.names, name.Text)
							}
						}
					case "tpl":
						out.tpl = true
					}
				}
			}
			for _, arg := range n.Args {
				visit(arg)
			}
		case *parse.IfNode:
			visit(n.Pipe)
			visit(n.List)
			visit(n.ElseList)
		case *parse.RangeNode:
			visit(n.Pipe)
			visit(n.List)
			visit(n.ElseList)
		case *parse.WithNode:
			visit(n.Pipe)
			visit(n.List)
			visit(n.ElseList)
		}
	}
	visit(node)
	return out
}

// findCycle answers one cycle of the call graph (its names in order, the
// first repeated at the end), or nothing.
func findCycle(calls map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var found []string
	var visit func(string) bool
	visit = func(name string) bool {
		state[name] = open
		stack = append(stack, name)
		for _, next := range calls[name] {
			switch state[next] {
			case open:
				for i, n := range stack {
					if n == next {
						found = append(append([]string{}, stack[i:]...), next)
						return true
					}
				}
			case unseen:
				if _, known := calls[next]; known && visit(next) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
		return false
	}
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if state[name] == unseen && visit(name) {
			return found
		}
	}
	return nil
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
