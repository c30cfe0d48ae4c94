/// A message that cannot be rendered for a platform (over the size limit, a reserved key, an
/// override the service would refuse), located by the job field at fault (`message`, `data.aps`,
/// `payload.fcm.token`…). The job fails as a whole: no target could take it. It is the same shape
/// as a parsing problem, so the parser reports both in one list.
public typealias RenderError = JobProblem
