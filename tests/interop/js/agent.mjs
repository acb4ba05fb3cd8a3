// A small A2A agent built on the official @a2a-js/sdk server: its DefaultRequestHandler, InMemoryTaskStore and
// express handlers for JSON-RPC (1.0 and the v0.3 compat layer) and HTTP+JSON. The executor is trivial: it
// answers every message with one fixed artifact, so what a client sees is the SDK's own protocol handling.
//
//   node agent.mjs [port] [full|v03]
//
// Port 0 (the default) picks a free one. Prints `ready <port>` once listening. `v03` serves a card with only the
// v0.3 JSON-RPC interface (an agent that speaks nothing newer). A message whose first text part starts with
// `slow` keeps the task WORKING for SLOW_MS before completing (for cancel and subscribe tests).
import express from 'express';
import { AgentCard, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const [portArg = '0', mode = 'full'] = process.argv.slice(2);
const SLOW_MS = 1500;
export const FIXED_ARTIFACT = { artifactId: 'fixture-result', name: 'result', parts: [{ text: 'fixture-result' }] };

const now = () => new Date().toISOString();

function firstText(message) {
  for (const part of message?.parts ?? []) {
    if (part.content?.$case === 'text') return part.content.value;
  }
  return '';
}

class FixedExecutor {
  constructor() {
    this.canceled = new Set();
  }

  async execute(context, bus) {
    const { taskId, contextId } = context;
    const status = (state) => ({ state, timestamp: now() });
    if (!context.task) {
      bus.publish(AgentEvent.task(Task.fromJSON({
        id: taskId, contextId, status: status('TASK_STATE_SUBMITTED'), history: [],
      })));
    }
    bus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({
      taskId, contextId, status: status('TASK_STATE_WORKING'),
    })));
    if (firstText(context.userMessage).startsWith('slow')) {
      await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
    }
    if (this.canceled.has(taskId)) return;
    bus.publish(AgentEvent.artifactUpdate(TaskArtifactUpdateEvent.fromJSON({
      taskId, contextId, artifact: FIXED_ARTIFACT, lastChunk: true,
    })));
    bus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({
      taskId, contextId, status: status('TASK_STATE_COMPLETED'),
    })));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    this.canceled.add(taskId);
    bus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({
      taskId, contextId: '', status: { state: 'TASK_STATE_CANCELED', timestamp: now() },
    })));
    bus.finished();
  }
}

function card(base) {
  const v03 = { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' };
  const interfaces = mode === 'v03' ? [v03] : [
    { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    v03,
  ];
  return AgentCard.fromJSON({
    name: 'JS SDK fixture agent',
    description: 'Answers every message with one fixed artifact (@a2a-js/sdk DefaultRequestHandler).',
    version: '1.0.0',
    supportedInterfaces: interfaces,
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Fixed answer', description: 'Returns a fixed artifact.', tags: ['fixture'] }],
  });
}

const app = express();
const server = app.listen(Number(portArg), '127.0.0.1', () => {
  const { port } = server.address();
  const handler = new DefaultRequestHandler(card(`http://127.0.0.1:${port}`), new InMemoryTaskStore(),
    new FixedExecutor());
  const user = UserBuilder.noAuthentication;
  app.use('/.well-known/agent-card.json',
    agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: user, legacyCompat: { enabled: true } }));
  app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: user }));
  process.stdout.write(`ready ${port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
