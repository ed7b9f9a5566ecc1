// A config module for the suggested-prompts tests: three prompts under a heading of its own.
export default {
  slack: {
    suggestedPromptsTitle: "Start here",
    suggestedPrompts: [
      { title: "Deploy status", message: "What is deployed where right now?" },
      { title: "Open incidents", message: "List the open incidents and who owns them." },
      { title: "On call", message: "Who is on call this week?" },
    ],
  },
};
