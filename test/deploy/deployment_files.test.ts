// The deployment files (Dockerfile, deploy/compose.yaml, deploy/kubernetes/; docs/operations.md
// "Deployment") name files, commands, ports and config fields that exist: no Docker daemon or
// cluster needed. The configs they mount are loaded with the gateway's own loader. The nginx
// front (deploy/nginx/tessera.conf) runs in test/deploy/nginx_front.test.ts; here, what needs no
// nginx: its defaults and the excerpt docs/operations.md shows of it.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { startCommand } from '../../gateway/cli/start_command.js';
import { loadConfigFile, validateConfig, type LoadedConfig } from '../../gateway/config/load.js';
import { maxBodyBytes } from '../../gateway/http/body_reader.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** The Dockerfile's instructions by stage, continuation lines joined, comments dropped. */
function dockerStages(): Instruction[][] {
  const stages: Instruction[][] = [];
  const lines = read('Dockerfile')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
  for (const line of lines) {
    const [keyword, ...rest] = line.trim().split(/\s+/);
    const instruction = { keyword: (keyword as string).toUpperCase(), args: rest.join(' ') };
    if (instruction.keyword === 'FROM') stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}

const stages = dockerStages();
const [buildStage, runtimeStage] = stages as [Instruction[], Instruction[]];
const all = (stage: Instruction[], keyword: string) => stage.filter((i) => i.keyword === keyword).map((i) => i.args);
const one = (stage: Instruction[], keyword: string) => all(stage, keyword).at(-1) ?? '';
const cmd = JSON.parse(one(runtimeStage, 'CMD')) as string[];
const configPathInImage = cmd[cmd.indexOf('--config') + 1] as string;
const workdir = one(runtimeStage, 'WORKDIR');
/** `ENV A=1 B=2` of the runtime stage. */
const imageEnv = Object.fromEntries(
  all(runtimeStage, 'ENV').flatMap((args) => [...args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])),
);
const port = Number(one(runtimeStage, 'EXPOSE'));

t.test('Dockerfile', async (t) => {
  t.test('two stages on node:22-slim, the Node line engines names: a build stage, then the runtime', async (t) => {
    t.equal(stages.length, 2);
    t.equal(one(buildStage, 'FROM'), 'node:22-slim AS build');
    t.equal(one(runtimeStage, 'FROM'), 'node:22-slim');
    // docs/operations.md, "Running": Node 22 LTS is the supported runtime.
    t.equal(JSON.parse(read('package.json')).engines.node, '^22.15.0');
  });

  t.test("the runtime stage checks the HTTP engine's binaries against the pinned list", async (t) => {
    t.ok(all(runtimeStage, 'COPY').some((args) => args.split(/\s+/).includes('uws_binaries.sha256')));
    t.ok(
      all(runtimeStage, 'RUN').some((run) => /npm ci --omit=dev .*&& sha256sum --check --strict --quiet uws_binaries\.sha256\b/.test(run)),
      'after npm ci, sha256sum --check fails the build on a binary not pinned',
    );
  });

  t.test('the runtime stage installs production dependencies only and takes dist/ from the build stage', async (t) => {
    t.ok(
      all(runtimeStage, 'RUN').some((run) => /\bnpm ci --omit=dev\b/.test(run)),
      'npm ci --omit=dev',
    );
    t.ok(all(runtimeStage, 'COPY').includes('--from=build /app/dist dist'));
    t.ok(all(buildStage, 'RUN').includes('npm run build'));
    t.match(JSON.parse(read('package.json')).scripts.build, /tsconfig\.build\.json/);
  });

  t.test('it runs as a user that is not root', async (t) => {
    const user = one(runtimeStage, 'USER');
    t.ok(user !== '' && user !== 'root' && user !== '0', `USER ${user}`);
  });

  t.test('every file it copies from the context exists and is not excluded by .dockerignore', async (t) => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    for (const stage of stages) {
      for (const args of all(stage, 'COPY').filter((a) => !a.startsWith('--from'))) {
        const sources = args.split(/\s+/).slice(0, -1);
        for (const source of sources) {
          t.ok(existsSync(path.join(root, source)), `${source} exists`);
          t.notOk(
            ignored.some((pattern) => source === pattern || source.startsWith(`${pattern}/`)),
            `${source} is in the build context`,
          );
        }
      }
    }
  });

  t.test('the build stage copies everything tsconfig.build.json compiles', async (t) => {
    const include = (JSON.parse(read('tsconfig.build.json')) as { include: string[] }).include;
    const copied = all(buildStage, 'COPY').flatMap((args) => args.split(/\s+/).slice(0, -1));
    for (const entry of include) t.ok(copied.includes(entry), `${entry} copied`);
  });

  t.test('CMD starts the compiled CLI with a config path; the CLI has that command and option', async (t) => {
    t.equal(cmd[0], 'node');
    const entry = cmd[1] as string;
    t.match(entry, /^dist\/.+\.js$/);
    const source = entry.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    t.ok(existsSync(path.join(root, source)), `${entry} is built from ${source}`);
    t.equal(JSON.parse(read('package.json')).bin.tessera, `./${entry}`, 'the same entry as the tessera bin');
    t.same(cmd.slice(2, 3), startCommand.words);
    t.match(startCommand.usage, /--config FILE/);
    t.match(configPathInImage, /^\/.+\.json$/);
  });

  t.test('HEALTHCHECK asks /healthz on the exposed port, which the environment pins', async (t) => {
    t.ok(port > 0);
    t.match(one(runtimeStage, 'HEALTHCHECK'), new RegExp(`http://127\\.0\\.0\\.1:${port}/healthz`));
    t.equal(imageEnv.TESSERA_PORT, String(port));
    t.equal(imageEnv.TESSERA_HOST, '0.0.0.0');
  });
});

/** A mounted config as the gateway would load it in the image, with the image's environment. */
function loadAsInImage(config: Record<string, unknown>, configDir: string): LoadedConfig {
  return validateConfig(config, { configDir, env: { TESSERA_PORT: imageEnv.TESSERA_PORT, TESSERA_HOST: imageEnv.TESSERA_HOST } });
}

/** Where a path inside the image comes from in the repository, by the runtime stage's COPY lines. */
function imageSourceOf(imagePath: string): string | undefined {
  for (const args of all(runtimeStage, 'COPY').filter((a) => !a.startsWith('--from'))) {
    const [source, target] = args.split(/\s+/) as [string, string];
    const absoluteTarget = path.posix.resolve(workdir, target);
    if (imagePath === absoluteTarget || imagePath.startsWith(`${absoluteTarget}/`))
      return path.join(source, imagePath.slice(absoluteTarget.length));
  }
  return undefined;
}

t.test('deploy/compose.yaml', async (t) => {
  // Compose reads YAML merge keys (`<<: *gateway`); YAML 1.2 leaves them out unless asked.
  const compose = parse(read('deploy/compose.yaml'), { merge: true }) as {
    services: Record<
      string,
      {
        build?: { context: string; dockerfile: string };
        volumes?: string[];
        ports?: string[];
        command?: string[];
        stop_grace_period?: string;
      }
    >;
  };
  const gateways = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);
  const composeDir = path.join(root, 'deploy');

  t.test('two gateways built from the Dockerfile, each publishing the image port', async (t) => {
    t.equal(gateways.length, 2);
    for (const [name, service] of gateways) {
      const build = service.build as { context: string; dockerfile: string };
      t.equal(path.resolve(composeDir, build.context, build.dockerfile), path.join(root, 'Dockerfile'), `${name} builds the Dockerfile`);
      t.ok(
        service.ports?.some((mapping) => mapping.endsWith(`:${port}`)),
        `${name} publishes ${port}`,
      );
    }
  });

  t.test('Redis with AOF (every second) and no eviction', async (t) => {
    const command = (compose.services.redis?.command ?? []).join(' ');
    t.match(command, /--appendonly yes/);
    t.match(command, /--appendfsync everysec/);
    t.match(command, /--maxmemory-policy noeviction/);
  });

  t.test('the mounted config is where the image reads it, and valid for the gateway', async (t) => {
    for (const [name, service] of gateways) {
      const mount = service.volumes?.find((volume) => volume.split(':')[1] === configPathInImage);
      t.ok(mount, `${name} mounts a config at ${configPathInImage}`);
      const hostFile = path.resolve(composeDir, (mount as string).split(':')[0] as string);
      const config = await loadConfigFile(hostFile, { env: { TESSERA_PORT: imageEnv.TESSERA_PORT, TESSERA_HOST: imageEnv.TESSERA_HOST } });
      t.equal(config.store.type, 'redis', 'shared state for two gateways');
      t.equal(config.store.type === 'redis' && new URL(config.store.url).hostname, 'redis', 'the compose Redis service');
      t.equal(config.listen.port, port);
      const validators = imageSourceOf(config.validatorsDir);
      t.ok(
        validators !== undefined && existsSync(path.join(root, validators)),
        `validatorsDir ${config.validatorsDir} is copied into the image`,
      );
      const grace = Number.parseInt(service.stop_grace_period ?? '10', 10);
      t.ok(grace > config.shutdown.drainSeconds + config.shutdown.requestTimeoutSeconds, 'the stop grace outlasts the drain');
    }
  });
});

t.test('deploy/kubernetes', async (t) => {
  const dir = path.join(root, 'deploy/kubernetes');
  type Resource = { kind: string; metadata: { name: string }; [key: string]: unknown };
  const files = readdirSync(dir).filter((file) => file.endsWith('.yaml'));
  const resources: Resource[] = files.flatMap((file) =>
    parseAllDocuments(readFileSync(path.join(dir, file), 'utf8')).map((doc) => doc.toJS() as Resource),
  );
  const byKind = (kind: string) => resources.filter((r) => r.kind === kind);

  t.test('the kustomization lists every manifest', async (t) => {
    const kustomization = byKind('Kustomization')[0] as unknown as { resources: string[] };
    t.same([...kustomization.resources].sort(), files.filter((file) => file !== 'kustomization.yaml').sort());
  });

  interface Container {
    ports: { name: string; containerPort: number }[];
    env: { name: string; value: string }[];
    readinessProbe: { httpGet: { path: string; port: string | number } };
    livenessProbe: { httpGet: { path: string; port: string | number } };
    lifecycle: { preStop: { exec: { command: string[] } } };
    volumeMounts: { name: string; mountPath: string }[];
  }
  interface Deployment {
    spec: {
      selector: { matchLabels: Record<string, string> };
      template: {
        metadata: { labels: Record<string, string> };
        spec: {
          terminationGracePeriodSeconds: number;
          containers: Container[];
          volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string } }[];
        };
      };
    };
  }
  const deployment = byKind('Deployment')[0] as unknown as Deployment;
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0] as Container;
  const labels = deployment.spec.template.metadata.labels;
  const namedPort = (p: string | number) => (typeof p === 'number' ? p : container.ports.find((cp) => cp.name === p)?.containerPort);

  const configVolume = pod.volumes.find((v) => v.configMap !== undefined);
  const configMount = container.volumeMounts.find((m) => m.name === configVolume?.name);
  const configMap = byKind('ConfigMap').find((c) => c.metadata.name === configVolume?.configMap?.name) as unknown as {
    data: Record<string, string>;
  };
  const configKey = path.posix.relative(configMount?.mountPath ?? '', configPathInImage);
  const config = loadAsInImage(
    JSON.parse(configMap.data[configKey] as string) as Record<string, unknown>,
    path.posix.dirname(configPathInImage),
  );

  t.test('the ConfigMap holds the config at the path the image reads, valid for the gateway', async (t) => {
    t.ok(configMap.data[configKey], `${configKey} in the ConfigMap mounted at ${configMount?.mountPath}`);
    t.equal(config.store.type, 'redis', 'several pods share state');
    const validators = imageSourceOf(config.validatorsDir);
    t.ok(validators !== undefined && existsSync(path.join(root, validators)), `validatorsDir ${config.validatorsDir} is in the image`);
  });

  t.test('the signing key files the config names come from the Secret', async (t) => {
    const secretVolume = pod.volumes.find((v) => v.secret !== undefined);
    const secretMount = container.volumeMounts.find((m) => m.name === secretVolume?.name);
    const secret = byKind('Secret').find((s) => s.metadata.name === secretVolume?.secret?.secretName) as unknown as {
      stringData: Record<string, string>;
    };
    t.ok(config.signing.keys.length > 0, 'production signs with configured keys');
    for (const key of config.signing.keys) {
      t.equal(path.posix.dirname(key.file), secretMount?.mountPath, `${key.file} is in the Secret's mount`);
      t.ok(path.posix.basename(key.file) in secret.stringData, `${path.posix.basename(key.file)} is a key of the Secret`);
    }
  });

  t.test('readiness on /readyz, liveness on /healthz, on the port the config listens on', async (t) => {
    t.equal(container.readinessProbe.httpGet.path, '/readyz');
    t.equal(container.livenessProbe.httpGet.path, '/healthz');
    t.equal(namedPort(container.readinessProbe.httpGet.port), config.listen.port);
    t.equal(namedPort(container.livenessProbe.httpGet.port), config.listen.port);
  });

  t.test('a preStop sleep, and a grace period longer than it plus the drain and the request timeout', async (t) => {
    const [sleep, seconds] = container.lifecycle.preStop.exec.command;
    t.equal(sleep, 'sleep');
    const stop = Number(seconds) + config.shutdown.drainSeconds + config.shutdown.requestTimeoutSeconds;
    t.ok(pod.terminationGracePeriodSeconds > stop, `${pod.terminationGracePeriodSeconds} s > ${stop} s`);
    t.ok(pod.terminationGracePeriodSeconds > config.shutdown.drainSeconds, 'terminationGracePeriodSeconds > drainSeconds');
  });

  t.test('the Service and the PodDisruptionBudget select the pods', async (t) => {
    const service = byKind('Service')[0] as unknown as {
      spec: { selector: Record<string, string>; ports: { targetPort: string | number }[] };
    };
    t.match(labels, service.spec.selector);
    t.equal(namedPort(service.spec.ports[0]?.targetPort as string | number), config.listen.port);
    const pdb = byKind('PodDisruptionBudget')[0] as unknown as {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    t.match(labels, pdb.spec.selector.matchLabels);
    t.match(labels, deployment.spec.selector.matchLabels);
    t.ok(pdb.spec.minAvailable >= 1);
  });
});

t.test('deploy/nginx/tessera.conf', async (t) => {
  const conf = read('deploy/nginx/tessera.conf');
  const directive = (name: string, within = conf) =>
    [...within.matchAll(new RegExp(`^\\s*${name}\\s+([^;]+);`, 'gm'))].map((m) => (m[1] as string).trim());
  const upstream = /upstream tessera \{([\s\S]*?)\n\}/.exec(conf)?.[1] ?? '';

  t.test("its default upstream is the image's port", async (t) => {
    t.same(directive('server', upstream), [`127.0.0.1:${port}`]);
  });

  t.test('HTTP/1.1 upstream, with idle connections closed before uWS closes them (10 s)', async (t) => {
    t.same(directive('proxy_http_version'), ['1.1']);
    const idle = directive('keepalive_timeout', upstream);
    t.equal(idle.length, 1, 'an upstream keepalive_timeout');
    t.ok(Number.parseInt(idle[0] ?? '', 10) < 10 && /^\d+s$/.test(idle[0] ?? ''), `${idle[0]} < 10s`);
  });

  t.test("the body limit is Tessera's", async (t) => {
    t.same(directive('client_max_body_size'), [`${maxBodyBytes / 1024}k`]);
  });

  t.test('every line of the excerpt in docs/operations.md is in the file', async (t) => {
    const docs = read('docs/operations.md');
    const section = docs.slice(docs.indexOf('### The shipped nginx front'), docs.indexOf('### The 505 of a default nginx'));
    const excerpt = /```nginx\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    t.ok(excerpt.includes('upstream tessera'), 'the excerpt is there');
    const lines = new Set(conf.split('\n').map((line) => line.trim()));
    for (const line of excerpt.split('\n').map((l) => l.trim())) if (line !== '') t.ok(lines.has(line), line);
  });
});
