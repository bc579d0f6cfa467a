import type { SidecarClient } from '../sidecar-client/create-sidecar-client.js';
import type { TurnFeatures } from './sidecar-feature-flags.js';

/**
 * `client`, opening every turn with `features` turned on (Brain, skills) where the turn's own
 * context does not say otherwise: the CLI's turns, the workflow task turns and the background
 * jobs it starts all reach what the operator turned on, with no change to the code that opens them.
 */
export function withTurnFeatures(client: SidecarClient, features: TurnFeatures): SidecarClient {
  if (!features.brainEnabled && (features.enabledSkills ?? []).length === 0) return client;
  return {
    openTurn(context, options) {
      return client.openTurn(
        {
          ...context,
          brainEnabled: context.brainEnabled ?? features.brainEnabled ?? false,
          enabledSkills: context.enabledSkills ?? features.enabledSkills ?? [],
        },
        options,
      );
    },
    close() {
      client.close();
    },
  };
}
