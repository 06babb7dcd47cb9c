// A service's own agent: a tool and a model provider of its own (a rule-based one, so the check needs no model).
import { z } from 'zod';
import { defineTool, type ModelProvider } from 'agent-sessions';

export const orderStatus = defineTool({
  name: 'order_status',
  description: 'The shipping status of an order.',
  input: z.object({ orderId: z.string().regex(/^\d+$/) }),
  execute: ({ orderId }) => `Order ${orderId} shipped on Monday.`,
});

/** Calls order_status with the first number of the question, then answers with what the tool said. */
export const rulesProvider: ModelProvider = {
  name: 'openai-compatible',
  async step(request) {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') {
      const text = last.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
      return { text, toolCalls: [], finish: 'stop' };
    }
    const question = last?.role === 'user' ? last.content.map((block) => block.text).join(' ') : '';
    const orderId = /\d+/.exec(question)?.[0] ?? '0';
    const call = { callId: `call-${request.requestIndex}`, name: 'order_status', arguments: { orderId } };
    return { text: '', toolCalls: [call], finish: 'tool-calls' };
  },
};
