// A config module for the end-to-end approval tests: the reminder after 1.5 s instead of 2 minutes.
export default { approvalReminderMs: 1500 };
