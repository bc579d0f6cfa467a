import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Pod, Secret, Service, type IContainer, type IPodSpec, type IProbe } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseServeOptions } from '../../../controller/control-plane/cli/serve/serve-options.js';
import { parseSidecarArgs } from '../../../sidecar/cli.js';

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [key: string]: unknown };

const models: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Pod': Pod,
  'v1/Service': Service,
  'v1/Secret': Secret,
  'v1/ConfigMap': ConfigMap,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

function load(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(join('deploy', file), 'utf8')).map((document) => {
    expect(document.errors).toEqual([]);
    return document.toJS() as Manifest;
  });
}

const files = ['controller.yaml', 'agent.yaml', 'network-policy.yaml', 'secrets.example.yaml'];
const all = files.flatMap(load);
const find = <T = Manifest>(kind: string, name: string): T => {
  const found = all.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (!found) throw new Error(`deploy/ has no ${kind} ${name}`);
  return found as T;
};

const deployment = find<Manifest & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: IPodSpec } } }>(
  'Deployment',
  'tools-runtime-controller',
);
const controllerPod = deployment.spec.template.spec;
const controller = controllerPod.containers.find((container) => container.name === 'controller')!;
const agentPod = find<Manifest & { spec: IPodSpec }>('Pod', 'agent-0');
const sidecar = agentPod.spec.initContainers!.find((container) => container.name === 'sidecar')!;
const secrets = all.filter((manifest) => manifest.kind === 'Secret') as Array<Manifest & { stringData: Record<string, string> }>;

/** The value after `flag` in a container's args. */
const flag = (container: IContainer, name: string) => {
  const args = container.args ?? [];
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
};
/** A probe's script flags. */
const probeFlag = (probe: IProbe | undefined, name: string) => {
  const command = probe?.exec?.command ?? [];
  const index = command.indexOf(name);
  return index >= 0 ? command[index + 1] : undefined;
};
const port = (address: string | undefined) => Number(address?.split(':').at(-1));

/**
 * Builds a scratch root where every volume a container mounts exists (secret items as files), so the
 * container's args can go through the program's own flag parser with their paths re-rooted there.
 */
const roots: string[] = [];
function rooted(pod: IPodSpec, container: IContainer): { args: string[]; root: string } {
  const root = mkdtempSync(join(tmpdir(), 'deploy-test-'));
  roots.push(root);
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes?.find((candidate) => candidate.name === mount.name);
    expect(volume, `volume ${mount.name}`).toBeDefined();
    const dir = join(root, mount.mountPath);
    mkdirSync(dir, { recursive: true });
    for (const item of volume?.secret?.items ?? []) writeFileSync(join(dir, item.path), 'test-token\n');
    if (volume?.configMap) {
      const map = find<Manifest & { data: Record<string, string> }>('ConfigMap', volume.configMap.name!);
      for (const [key, value] of Object.entries(map.data)) writeFileSync(join(dir, key), value);
    }
  }
  const mounts = (container.volumeMounts ?? []).map((mount) => mount.mountPath);
  const args = (container.args ?? []).map((arg) => (mounts.some((path) => arg === path || arg.startsWith(`${path}/`)) ? join(root, arg) : arg));
  return { args, root };
}
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe('deploy/ manifests', () => {
  it('every document is a known kind that validates against the Kubernetes schemas', () => {
    expect(all.length).toBeGreaterThanOrEqual(9);
    for (const manifest of all) {
      const Model = models[`${manifest.apiVersion}/${manifest.kind}`];
      expect(Model, `${manifest.apiVersion} ${manifest.kind}`).toBeDefined();
      expect(() => new Model!(manifest as never).validate(), `${manifest.kind} ${manifest.metadata.name}`).not.toThrow();
      expect(manifest.metadata.namespace).toBe('tools-runtime');
    }
  });

  it('the validation would catch a broken manifest', () => {
    const broken = structuredClone(deployment) as unknown as { spec: { replicas: unknown } };
    broken.spec.replicas = 'three';
    expect(() => new Deployment(broken as never).validate()).toThrow(/replicas/);
    const noImage = structuredClone(agentPod) as unknown as { spec: { initContainers: Array<{ ports: Array<{ containerPort: unknown }> }> } };
    noImage.spec.initContainers[0]!.ports[0]!.containerPort = 'seven thousand';
    expect(() => new Pod(noImage as never).validate()).toThrow(/containerPort/);
  });

  it("the controller's args and env go through serve's own parser: several replicas on PostgreSQL from a Secret", () => {
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    const { args } = rooted(controllerPod, controller);
    const databaseEnv = controller.env?.find((variable) => variable.name === 'DATABASE_URL');
    const ref = databaseEnv?.valueFrom?.secretKeyRef;
    const secret = secrets.find((candidate) => candidate.metadata.name === ref?.name);
    expect(secret?.stringData[ref!.key]).toMatch(/^postgres:\/\//);
    const options = parseServeOptions(args.slice(1), { DATABASE_URL: secret!.stringData[ref!.key]! });
    expect(options.database).toMatch(/^postgres:\/\//);
    expect(options.tokenFile).toBeDefined();
    expect(port(options.listen)).toBe(controller.ports!.find((p) => p.name === 'grpc')!.containerPort);
    // Kubernetes waits long enough for the drain's grace before it kills the container.
    expect(controllerPod.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(options.graceMs);
    const service = find<Manifest & { spec: { selector: Record<string, string>; ports: Array<{ targetPort: string }> } }>('Service', 'tools-runtime-controller');
    expect(service.spec.ports[0]!.targetPort).toBe('grpc');
    expect(deployment.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    const budget = find<Manifest & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } }>('PodDisruptionBudget', 'tools-runtime-controller');
    expect(deployment.spec.template.metadata.labels).toMatchObject(budget.spec.selector.matchLabels);
    expect(budget.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it("the sidecar is a native sidecar container whose args go through the sidecar's own parser", () => {
    expect(sidecar.restartPolicy).toBe('Always');
    expect(agentPod.spec.containers.map((container) => container.name)).toEqual(['computer']);
    const { args } = rooted(agentPod.spec, sidecar);
    const options = parseSidecarArgs(args, {});
    expect(options.token).toBe('test-token');
    expect(port(options.listen)).toBe(sidecar.ports!.find((p) => p.name === 'sidecar')!.containerPort);
    // The computer shares the workspace with the sidecar.
    const workspaceMount = sidecar.volumeMounts!.find((mount) => mount.mountPath === flag(sidecar, '--workspace'));
    expect(agentPod.spec.containers[0]!.volumeMounts!.map((mount) => mount.name)).toContain(workspaceMount!.name);
  });

  it("the model's commands run sandboxed in the sidecar container, which has what bubblewrap needs and cannot read the token", () => {
    const { args } = rooted(agentPod.spec, sidecar);
    const options = parseSidecarArgs(args, {});
    const sandbox = options.config.sandbox!;
    expect(sandbox.mode).toBe('workspace-write');
    expect(sandbox.network).toEqual({ mode: 'off' });
    // The token's whole folder is hidden from commands and file tools (a rotation swaps its files).
    const tokenMount = sidecar.volumeMounts!.find((mount) => mount.name === 'sidecar-token')!;
    const tokenFolder = args[args.indexOf('--token-file') + 1]!.slice(0, -'/token'.length);
    expect(tokenFolder.endsWith(tokenMount.mountPath)).toBe(true);
    expect(sandbox.hide).toContain(tokenFolder);
    expect(sandbox.hide).toContain(options.config.stateDir);
    // What bubblewrap needs: its own user namespace for the pod, namespaces and mounts allowed.
    expect(agentPod.spec.hostUsers).toBe(false);
    expect(sidecar.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'Unconfined' },
      appArmorProfile: { type: 'Unconfined' },
      procMount: 'Unmasked',
    });
    // The comments say where commands run: the sidecar container, not the computer one.
    const text = readFileSync(join('deploy', 'agent.yaml'), 'utf8');
    expect(text).toContain("The model's commands run in the SIDECAR container");
    expect(text).not.toMatch(/computer \(where the model's commands/);
    expect(agentPod.spec.containers[0]!.volumeMounts!.map((mount) => mount.name)).not.toContain('sidecar-token');
  });

  it('probes check the health service on the port each program listens on, with its own token file', () => {
    const cases: Array<[IContainer, string]> = [
      [controller, 'toolruntime.v1.ControlPlaneService'],
      [sidecar, 'toolruntime.v1.ToolSidecarService'],
    ];
    for (const [container, service] of cases) {
      const listen = port(flag(container, '--listen'));
      for (const probe of [container.readinessProbe, container.livenessProbe]) {
        expect(probe?.exec?.command?.slice(0, 2)).toEqual(['node', 'deploy/grpc-health-probe.mjs']);
        expect(port(probeFlag(probe, '--address'))).toBe(listen);
        expect(probeFlag(probe, '--token-file')).toBe(flag(container, '--token-file'));
      }
      expect(probeFlag(container.readinessProbe, '--service')).toBe(service);
      // Liveness accepts NOT_SERVING: a draining process is alive.
      expect(container.livenessProbe?.exec?.command).toContain('--live');
      expect(container.readinessProbe?.exec?.command).not.toContain('--live');
    }
  });

  it('containers run the built entry points with plain node, the ones .ci/build.mjs makes', () => {
    const build = readFileSync(new URL('../../../.ci/build.mjs', import.meta.url), 'utf8');
    for (const [container, entry] of [
      [controller, 'controller/control-plane-main'],
      [sidecar, 'sidecar/main'],
    ] as const) {
      const command = container.command ?? [];
      expect(command[0]).toBe('node');
      expect(command.at(-1)).toBe(`dist/${entry}.js`);
      expect(build).toContain(`'${entry}':`);
    }
  });

  it('secret names and keys agree, and the agent pod holds no control-plane credential', () => {
    const referenced = (pod: IPodSpec, container: IContainer) => [
      ...(pod.volumes ?? []).flatMap((volume) => (volume.secret ? (volume.secret.items ?? []).map((item) => [volume.secret!.secretName!, item.key]) : [])),
      ...(container.env ?? []).flatMap((variable) => (variable.valueFrom?.secretKeyRef && !variable.valueFrom.secretKeyRef.optional ? [[variable.valueFrom.secretKeyRef.name!, variable.valueFrom.secretKeyRef.key]] : [])),
    ];
    for (const [name, key] of [...referenced(controllerPod, controller), ...referenced(agentPod.spec, sidecar)]) {
      expect(secrets.find((secret) => secret.metadata.name === name)?.stringData, `${name}/${key}`).toHaveProperty(key!);
    }
    const agentSecrets = referenced(agentPod.spec, sidecar).map(([name]) => name);
    expect(agentSecrets).toEqual(['tools-runtime-sidecar-token']);
    expect(JSON.stringify(agentPod)).not.toMatch(/DATABASE_URL|tools-runtime-controller/);
    // The controller reaches each sidecar with the token file it mounts from the same Secret.
    const agents = JSON.parse(find<Manifest & { data: Record<string, string> }>('ConfigMap', 'tools-runtime-agents').data['agents.json']!) as Record<string, { address: string; tokenFile: string }>;
    const sidecarTokenMount = controller.volumeMounts!.find((mount) => mount.name === 'sidecar-token')!;
    for (const agent of Object.values(agents)) {
      expect(port(agent.address)).toBe(port(flag(sidecar, '--listen')));
      expect(dirname(agent.tokenFile)).toBe(sidecarTokenMount.mountPath);
    }
    expect(Object.keys(agents)).toContain(agentPod.metadata.name);
  });

  it('the NetworkPolicy lets only controllers reach the sidecar port', () => {
    const policy = find<Manifest & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: Array<{ from: Array<{ podSelector: { matchLabels: Record<string, string> } }>; ports: Array<{ port: number }> }> } }>(
      'NetworkPolicy',
      'tools-runtime-sidecar-from-controllers',
    );
    expect(agentPod.metadata.labels).toMatchObject(policy.spec.podSelector.matchLabels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toHaveLength(1);
    expect(policy.spec.ingress[0]!.from).toHaveLength(1);
    expect(deployment.spec.template.metadata.labels).toMatchObject(policy.spec.ingress[0]!.from[0]!.podSelector.matchLabels);
    expect(agentPod.metadata.labels).not.toMatchObject(policy.spec.ingress[0]!.from[0]!.podSelector.matchLabels);
    expect(policy.spec.ingress[0]!.ports.map((p) => p.port)).toEqual([port(flag(sidecar, '--listen'))]);
  });
});
