//! The pod every informer benchmark serves: shaped as a Deployment's pod (labels, owner
//! reference, `managedFields` of two managers, a container with probes and volumes, status
//! conditions), about 4.7 KB of JSON. One generator, included by `#[path]` from
//! `benches/informer.rs` and `benches/peer/` (its own Cargo project), so both serve the same
//! pods.

/// Pod `i`: in namespace `team-{i % 20}`, 50 pods per ReplicaSet hash, on `node-{i % 50}`.
pub fn realistic_pod(i: usize) -> serde_json::Value {
    let ns = format!("team-{}", i % 20);
    let hash = format!("{:010x}", 0x5f3a9c1b7du64.wrapping_add((i / 50) as u64));
    let name = format!("web-{hash}-{i:06x}");
    let fields_v1 = serde_json::json!({
        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}, "f:version": {}},
            "f:ownerReferences": {".": {}, "k:{\"uid\":\"0f3c\"}": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {".": {}, "k:{\"name\":\"MODE\"}": {".": {}, "f:name": {}, "f:value": {}}},
            "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}},
            "f:readinessProbe": {".": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}}}, "f:resources": {".": {}, "f:limits": {}, "f:requests": {}}}},
            "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}
    });
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": format!("web-{hash}-"),
            "namespace": ns,
            "labels": {"app": "web", "tier": "frontend", "version": "v1.27.3", "pod-template-hash": hash,
                       "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/managed-by": "helm"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("web-{hash}"),
                                 "uid": "0f3c6a52-8d1e-4b7a-9c2f-5e6d7f8a9b0c", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-20T10:00:01Z", "fieldsType": "FieldsV1", "fieldsV1": fields_v1},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-20T10:00:09Z", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                    "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                    "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                    "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"10.244.1.17\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "containers": [{"name": "app", "image": "registry.example.com/shop/web:v1.27.3", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "production"}],
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "kube-api-access-x7k2p", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "nodeName": format!("node-{}", i % 50),
            "securityContext": {}, "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
            "volumes": [{"name": "kube-api-access-x7k2p", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}], "defaultMode": 420}}]
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-20T10:00:01Z"},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-20T10:00:09Z"},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-20T10:00:09Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-20T10:00:01Z"}],
            "hostIP": format!("192.168.{}.{}", (i / 250) % 250, i % 250), "podIP": "10.244.1.17", "podIPs": [{"ip": "10.244.1.17"}],
            "startTime": "2026-11-20T10:00:01Z",
            "containerStatuses": [{"name": "app", "state": {"running": {"startedAt": "2026-11-20T10:00:05Z"}}, "lastState": {}, "ready": true,
                "restartCount": 0, "image": "registry.example.com/shop/web:v1.27.3",
                "imageID": "registry.example.com/shop/web@sha256:4f53e8a1c2d3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b",
                "containerID": "containerd://9b1f3c5e7a9d2b4f6a8c0e2d4f6b8a0c2e4d6f8b0a2c4e6d8f0b2a4c6e8d0f2b", "started": true}],
            "qosClass": "Burstable"
        }
    })
}
