// Drives a live Quineling A2A server with the official @a2a-js/sdk client, unmodified.
//
//   node client.mjs <base-url> <scenario> [jsonrpc|rest]
//
// Prints one JSON object with what the scenario observed; tests/interop/test_js_sdk.py asserts on it.
// Every request goes through the SDK's own codecs, transports and error mapping.
import { randomUUID } from 'node:crypto';
import {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  SendMessageRequest,
  SubscribeToTaskRequest,
  taskStateToJSON,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  createAuthenticatingFetchWithRetry,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import {
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';

const SQUARE_SUM = '[2,3,4] | square | sum | report total';
const BINDINGS = { jsonrpc: 'JSONRPC', rest: 'HTTP+JSON' };

const [base, scenario, transport = 'jsonrpc'] = process.argv.slice(2);

async function connect() {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    preferredTransports: [BINDINGS[transport]],
  });
  return new ClientFactory(options).createFromUrl(base);
}

function userMessage(part, extra = {}) {
  return SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [part], ...extra },
  });
}

const dataPart = (data) => ({ mediaType: 'application/json', data });

// The `data` value of the task's quineling-result artifact (or undefined).
function resultData(task) {
  for (const artifact of task.artifacts ?? []) {
    for (const part of artifact.parts) {
      if (part.content?.$case === 'data') return part.content.value;
    }
  }
  return undefined;
}

const stateOf = (task) => taskStateToJSON(task.status.state);

// One stream event as {kind, state?, artifactId?}.
function eventSummary(event) {
  const { $case: kind, value } = event.payload;
  const entry = { kind };
  if (kind === 'task' || kind === 'statusUpdate') entry.state = taskStateToJSON(value.status.state);
  if (kind === 'artifactUpdate') entry.artifactId = value.artifact.artifactId;
  return entry;
}

function summary(task) {
  return {
    id: task.id,
    contextId: task.contextId,
    state: stateOf(task),
    artifactIds: (task.artifacts ?? []).map((a) => a.artifactId),
    historyLength: (task.history ?? []).length,
    result: resultData(task),
  };
}

async function send(client, data, extra) {
  const response = await client.sendMessage(userMessage(dataPart(data), extra));
  if (!('artifacts' in response)) throw new Error(`expected a task, got ${JSON.stringify(response)}`);
  return response;
}

async function drain(stream) {
  for await (const event of stream) void event;
}

// Calls fn and describes the error the SDK raised (or notes that none was raised).
async function expectError(fn) {
  try {
    await fn();
    return { raised: false };
  } catch (err) {
    return {
      raised: true,
      name: err?.name,
      reason: err?.reason,
      isTaskNotFound: err instanceof TaskNotFoundError,
      isTaskNotCancelable: err instanceof TaskNotCancelableError,
      isUnsupportedOperation: err instanceof UnsupportedOperationError,
      message: String(err?.message ?? err),
    };
  }
}

// A fetch that sends `Authorization: Bearer <token>` on every request (the SDK's own auth-handler hook).
function bearerFetch(token) {
  return createAuthenticatingFetchWithRetry(fetch, {
    headers: async () => ({ Authorization: `Bearer ${token}` }),
    shouldRetryWithHeaders: async () => undefined,
  });
}

async function connectWithToken(token, legacyCompat) {
  const fetchImpl = bearerFetch(token);
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: [BINDINGS[transport]],
  });
  return new ClientFactory(options).createFromUrl(base);
}

const scenarios = {
  // Against a server with authentication: A2A_TOKEN is the caller's bearer token, A2A_OTHER_TOKEN another
  // principal's. Every call of the caller's client carries the token; the other principal sees none of it.
  async bearer() {
    const client = await connectWithToken(process.env.A2A_TOKEN);
    const card = await client.getAgentCard();
    const created = await send(client, { operation: 'create', thought: SQUARE_SUM });
    const polled = await client.getTask(GetTaskRequest.fromJSON({ id: created.id }));
    const page = await client.listTasks(ListTasksRequest.fromJSON({ pageSize: 50 }));
    const streamed = [];
    for await (const event of client.sendMessageStream(userMessage({ text: SQUARE_SUM }))) {
      streamed.push(eventSummary(event));
    }
    const asked = await client.sendMessage(userMessage({ text: '' }));
    const seen = [];
    const reading = (async () => {
      for await (const event of client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: asked.id }))) {
        seen.push(eventSummary(event));
      }
    })();
    while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: asked.id }));
    await reading;
    const other = await connectWithToken(process.env.A2A_OTHER_TOKEN);
    const anonymous = await connect();
    return {
      security: card.securitySchemes?.bearer?.scheme?.value?.scheme,
      requirements: card.securityRequirements,
      created: summary(created),
      polled: summary(polled),
      listed: page.tasks.map((t) => t.id),
      totalSize: page.totalSize,
      streamed,
      subscribed: seen,
      canceled: summary(canceled),
      otherGet: await expectError(() => other.getTask(GetTaskRequest.fromJSON({ id: created.id }))),
      otherCancel: await expectError(() => other.cancelTask(CancelTaskRequest.fromJSON({ id: asked.id }))),
      anonymousGet: await expectError(() => anonymous.getTask(GetTaskRequest.fromJSON({ id: created.id }))),
      anonymousSend: await expectError(() => anonymous.sendMessage(userMessage({ text: SQUARE_SUM }))),
    };
  },

  // The v0.3 compat JSON-RPC transport with a bearer token.
  async bearerV03() {
    const legacyCompat = { enabled: true };
    const fetchImpl = bearerFetch(process.env.A2A_TOKEN);
    const resolver = new DefaultAgentCardResolver({ legacyCompat });
    const card = await resolver.resolve(base);
    const legacyOnly = {
      ...card,
      supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === '0.3'),
    };
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ legacyCompat, fetchImpl })],
        cardResolver: resolver,
      }),
    );
    const client = await factory.createFromAgentCard(legacyOnly);
    const created = await send(client, { operation: 'create', thought: SQUARE_SUM });
    const polled = await client.getTask(GetTaskRequest.fromJSON({ id: created.id }));
    const anonymous = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ legacyCompat })],
        cardResolver: resolver,
      }),
    ).createFromAgentCard(legacyOnly);
    return {
      protocolVersion: client.protocolVersion,
      created: summary(created),
      polled: summary(polled),
      anonymousGet: await expectError(() => anonymous.getTask(GetTaskRequest.fromJSON({ id: created.id }))),
    };
  },

  async card() {
    const client = await connect();
    const card = await client.getAgentCard();
    return {
      protocolVersion: client.protocolVersion,
      transport: client.transport.protocolName,
      interfaces: card.supportedInterfaces.map((i) => ({
        url: i.url,
        protocolBinding: i.protocolBinding,
        protocolVersion: i.protocolVersion,
      })),
      version: card.version,
      streaming: card.capabilities?.streaming,
      pushNotifications: card.capabilities?.pushNotifications,
      defaultInputModes: card.defaultInputModes,
      defaultOutputModes: card.defaultOutputModes,
      skills: card.skills.map((s) => ({ id: s.id, tags: s.tags, examples: s.examples })),
    };
  },

  async lifecycle() {
    const client = await connect();
    const created = await send(client, { operation: 'create', thought: SQUARE_SUM });
    const artifactId = resultData(created).result.artifact.id;
    const inspected = await send(client, { operation: 'inspect', artifactId });
    const ran = await send(client, { operation: 'run', artifactId });
    const record = resultData(ran).result;
    const reproduced = await send(client, { operation: 'reproduce', artifactId, recordId: record.id });
    return {
      create: summary(created),
      inspect: summary(inspected),
      run: summary(ran),
      reproduce: summary(reproduced),
    };
  },

  async stream() {
    const client = await connect();
    const events = [];
    for await (const event of client.sendMessageStream(
      userMessage(dataPart({ operation: 'create', thought: SQUARE_SUM })),
    )) {
      const entry = eventSummary(event);
      if (entry.kind === 'artifactUpdate') {
        entry.result = resultData({ artifacts: [event.payload.value.artifact] });
      }
      events.push(entry);
    }
    return { events };
  },

  async poll() {
    const client = await connect();
    const created = await send(client, { operation: 'create', thought: SQUARE_SUM });
    const full = await client.getTask(GetTaskRequest.fromJSON({ id: created.id }));
    const none = await client.getTask(GetTaskRequest.fromJSON({ id: created.id, historyLength: 0 }));
    return { created: summary(created), full: summary(full), historyZero: summary(none) };
  },

  async list() {
    const client = await connect();
    const created = await send(client, { operation: 'create', thought: SQUARE_SUM });
    const page = await client.listTasks(
      ListTasksRequest.fromJSON({ contextId: created.contextId, pageSize: 10, includeArtifacts: true }),
    );
    return {
      taskId: created.id,
      tasks: page.tasks.map(summary),
      nextPageToken: page.nextPageToken,
      pageSize: page.pageSize,
      totalSize: page.totalSize,
    };
  },

  async clarify() {
    const client = await connect();
    const asked = await client.sendMessage(userMessage({ text: '   ' }));
    const followUp = await send(
      client,
      { operation: 'create', thought: SQUARE_SUM },
      { taskId: asked.id, contextId: asked.contextId },
    );
    return { asked: summary(asked), followUp: summary(followUp) };
  },

  async cancel() {
    const client = await connect();
    const waiting = await client.sendMessage(userMessage({ text: '' }));
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: waiting.id }));
    const completed = await send(client, { operation: 'create', thought: SQUARE_SUM });
    const terminal = await expectError(() =>
      client.cancelTask(CancelTaskRequest.fromJSON({ id: completed.id })),
    );
    return { waiting: summary(waiting), canceled: summary(canceled), terminalCancel: terminal };
  },

  // SubscribeToTask on an interrupted task, then a follow-up from another call completes it.
  async subscribe() {
    const client = await connect();
    const asked = await client.sendMessage(userMessage({ text: ' ' }));
    const events = [];
    const reading = (async () => {
      for await (const event of client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: asked.id }))) {
        events.push(eventSummary(event));
      }
    })();
    while (events.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const done = await client.sendMessage(userMessage({ text: SQUARE_SUM }, { taskId: asked.id }));
    await reading;
    return { asked: summary(asked), done: summary(done), events };
  },

  // A streamed follow-up to a clarification that again needs clarification ends at INPUT_REQUIRED.
  async streamFollowUp() {
    const client = await connect();
    const asked = await client.sendMessage(userMessage({ text: '' }));
    const events = [];
    for await (const event of client.sendMessageStream(userMessage({ text: '' }, { taskId: asked.id }))) {
      events.push(eventSummary(event));
    }
    return { taskId: asked.id, events };
  },

  async pages() {
    const client = await connect();
    const contextId = randomUUID();
    const created = [];
    for (let i = 0; i < 3; i += 1) {
      created.push((await client.sendMessage(userMessage({ text: SQUARE_SUM }, { contextId }))).id);
    }
    const pages = [];
    let pageToken = '';
    do {
      const page = await client.listTasks(ListTasksRequest.fromJSON({ contextId, pageSize: 2, pageToken }));
      pages.push({
        ids: page.tasks.map((t) => t.id),
        totalSize: page.totalSize,
        artifacts: page.tasks.map((t) => t.artifacts.length),
      });
      pageToken = page.nextPageToken;
    } while (pageToken && pages.length < 5);
    return { created, pages };
  },

  // A runtime failure (failed task with structured metadata) and a message to a terminal task.
  async failures() {
    const client = await connect();
    const failed = await send(client, { operation: 'run', artifactId: 'nope' });
    const terminal = await expectError(() =>
      client.sendMessage(userMessage({ text: SQUARE_SUM }, { taskId: failed.id })),
    );
    return {
      failed: summary(failed),
      statusMetadata: failed.status.message?.metadata,
      terminalSend: terminal,
    };
  },

  async errors() {
    const client = await connect();
    const missing = `no-such-task-${randomUUID()}`;
    return {
      getTask: await expectError(() => client.getTask(GetTaskRequest.fromJSON({ id: missing }))),
      cancelTask: await expectError(() => client.cancelTask(CancelTaskRequest.fromJSON({ id: missing }))),
      followUp: await expectError(() =>
        client.sendMessage(userMessage({ text: SQUARE_SUM }, { taskId: missing })),
      ),
      subscribe: await expectError(() =>
        drain(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: missing }))),
      ),
    };
  },

  // The SDK's v0.3 compat client: a legacy-enabled JSON-RPC transport bound to the card's 0.3 interface.
  async v03() {
    const legacyCompat = { enabled: true };
    const resolver = new DefaultAgentCardResolver({ legacyCompat });
    const card = await resolver.resolve(base);
    const legacyOnly = {
      ...card,
      supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === '0.3'),
    };
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ legacyCompat })],
        cardResolver: resolver,
      }),
    );
    const client = await factory.createFromAgentCard(legacyOnly);
    const created = await send(client, { operation: 'create', thought: SQUARE_SUM });
    const artifactId = resultData(created).result.artifact.id;
    const ran = await send(client, { operation: 'run', artifactId });
    const polled = await client.getTask(GetTaskRequest.fromJSON({ id: ran.id }));
    const events = [];
    for await (const event of client.sendMessageStream(userMessage({ text: SQUARE_SUM }))) {
      events.push(event.payload.$case);
    }
    return {
      protocolVersion: client.protocolVersion,
      legacyInterfaces: legacyOnly.supportedInterfaces.length,
      create: summary(created),
      run: summary(ran),
      polled: summary(polled),
      streamKinds: events,
      missing: await expectError(() => client.getTask(GetTaskRequest.fromJSON({ id: 'no-such-task' }))),
      terminalCancel: await expectError(() => client.cancelTask(CancelTaskRequest.fromJSON({ id: ran.id }))),
      subscribeMissing: await expectError(async () => {
        try {
          await drain(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: 'no-such-task' })));
        } catch (err) {
          throw err.cause ?? err; // the v0.3 SSE client keeps the typed error as the cause
        }
      }),
    };
  },

  // World commands retried under their original sequence, then a compose birth (docs/ranch-guide.md):
  // pinned parents → preview → frame → admit twice → lineage → explicit run.
  async ranch() {
    const client = await connect();
    const op = async (data) => resultData(await send(client, data));
    const createdWorld = await op({ operation: 'worldCreate', worldKey: 'a2a-garden', seed: 23, affinity: 'neutral' });
    const worldId = createdWorld.result.id;
    const snapshot = (await op({ operation: 'worldInspect', worldId })).result;
    const originalCommand = {
      operation: 'worldCommand', worldId, expectedRevision: snapshot.revision,
      sequence: snapshot.nextSequence, command: { kind: 'advance', ticks: 4 },
    };
    const advanced = await op(originalCommand);
    const sameAcknowledgement = await op(originalCommand); // a new messageId: a transport retry only
    const after = (await op({ operation: 'worldInspect', worldId })).result;

    const parentA = (await op({ operation: 'create', thought: '[2,2,8] credits | sum | report request' })).result.artifact;
    const parentB = (await op({ operation: 'create', thought: '5 credits | allocate from 20 | report allocated, remaining' })).result.artifact;
    const pin = (a) => ({ artifactId: a.id, intentHash: a.companions.intentHash });
    const input = { parents: [pin(parentA), pin(parentB)], recipe: 'compose', nonce: 7, mutation: 'none', origin: { kind: 'manual' } };
    const prepared = (await op({ operation: 'offspringPreview', input })).result;
    const c = prepared.candidate;
    const framed = (await op({
      operation: 'offspringFrame', input, candidateId: c.candidateId, childSourceHash: c.childSourceHash,
      phase: 0, options: { budget: 4000, crests: 2 },
    })).result;
    const originalAdmission = {
      operation: 'offspringAdmit', input, candidateId: c.candidateId, childSourceHash: c.childSourceHash,
      target: { kind: 'library' }, requestId: `a2a-manual-birth-${transport}`,
    };
    const admitted = (await op(originalAdmission)).result;
    const sameBirth = (await op(originalAdmission)).result;
    const evidence = (await op({ operation: 'lineage', artifactId: admitted.artifactId, limit: 16 })).result;
    const executed = (await op({ operation: 'run', artifactId: admitted.artifactId })).result;
    return {
      revisionBefore: snapshot.revision,
      advanced: advanced.result,
      sameAcknowledgement: sameAcknowledgement.result,
      revisionAfter: after.revision,
      tickAdvance: after.tick - snapshot.tick,
      previewStatus: prepared.status,
      framePoints: framed.frame.points.length,
      frameCandidate: framed.candidateId === c.candidateId,
      admitted,
      sameBirth,
      lineageChildren: evidence.derivations.map((d) => d.childArtifactId),
      childOutputs: executed.outputs,
    };
  },
};

if (!scenarios[scenario] || !BINDINGS[transport]) {
  console.error(`usage: node client.mjs <base-url> <${Object.keys(scenarios).join('|')}> [jsonrpc|rest]`);
  process.exit(2);
}
const result = await scenarios[scenario]();
process.stdout.write(`${JSON.stringify(result)}\n`);
