import type { EventHandler } from "@fundraise/bus";
import type { ProjectsEvents } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** Remembers who owns the project, so deleting that user is refused without asking the projects service. */
export const onProjectCreated =
  (users: UserService): EventHandler<typeof ProjectsEvents.created> =>
  async ({ projectId, ownerId }) =>
    users.recordProjectCreated(projectId, ownerId);
