// k8s-schemas writes JSON schemas of the Kubernetes kinds the Helm chart
// renders, in kubeconform's layout ({kind}-{group}-{version}.json,
// "standalone-strict": every object closed), from the k8s.io/api Go types
// themselves. kubeconform downloads its schemas from GitHub by default,
// which CI cannot reach; the Go module proxy it can, so the schemas are
// made here: `go run . DIR` (scripts/check-helm.sh).
//
// Each field's type comes from its Go type and JSON name (unknown fields,
// a string where a number goes, a list for a map... are refused), with
// the types that marshal themselves (quantities, int-or-string, times)
// mapped by hand. Required fields are not known from the Go types (the
// API's own OpenAPI marks them): kubeconform's check of those is lost.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type kind struct {
	group, version, name string
	obj                  any
}

var kinds = []kind{
	{"apps", "v1", "DaemonSet", &appsv1.DaemonSet{}},
	{"", "v1", "Service", &corev1.Service{}},
	{"", "v1", "ConfigMap", &corev1.ConfigMap{}},
	{"", "v1", "Secret", &corev1.Secret{}},
	{"policy", "v1", "PodDisruptionBudget", &policyv1.PodDisruptionBudget{}},
}

func mapper(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeOf(resource.Quantity{}):
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
			{Type: "string", Pattern: `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`},
			{Type: "number"},
		}}
	case reflect.TypeOf(intstr.IntOrString{}):
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "string"}, {Type: "integer"}}}
	case reflect.TypeOf(metav1.Time{}), reflect.TypeOf(metav1.MicroTime{}):
		return &jsonschema.Schema{Type: "string", Format: "date-time"}
	case reflect.TypeOf(metav1.Duration{}):
		return &jsonschema.Schema{Type: "string"}
	}
	return nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: k8s-schemas DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	r := &jsonschema.Reflector{
		Mapper:                     mapper,
		DoNotReference:             true,
		RequiredFromJSONSchemaTags: true,
		AllowAdditionalProperties:  false,
	}
	for _, k := range kinds {
		s := r.Reflect(k.obj)
		s.Version = "http://json-schema.org/draft-07/schema#"
		// apiVersion and kind: exactly this kind's.
		apiVersion := k.version
		if k.group != "" {
			apiVersion = k.group + "/" + k.version
		}
		s.Properties.Set("apiVersion", &jsonschema.Schema{Type: "string", Enum: []any{apiVersion}})
		s.Properties.Set("kind", &jsonschema.Schema{Type: "string", Enum: []any{k.name}})
		s.Required = []string{"apiVersion", "kind", "metadata"}
		out, err := json.MarshalIndent(s, "", " ")
		if err != nil {
			panic(err)
		}
		name := strings.ToLower(k.name)
		if k.group != "" {
			name += "-" + k.group
		}
		name += "-" + k.version + ".json"
		if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
			panic(err)
		}
	}
}
