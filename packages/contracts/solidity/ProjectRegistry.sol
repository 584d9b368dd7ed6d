// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {IProjectRegistry} from "./interfaces/IProjectRegistry.sol";
import {AdminApprovals} from "./utils/AdminApprovals.sol";

/// @title Project registry: document hashes, user statuses, admins and whitelist voting.
/// @notice A project is the 32-byte digest of its IPFS directory CID. Whitelisted users vote on it; the
///         first time one side exceeds `threshold` percent of the whitelist, the project is finalized and
///         `ProjectEvaluation` is emitted (once per registration).
contract ProjectRegistry is IProjectRegistry, AccessControl, AdminApprovals {
    bytes32 public constant override ADMIN_ROLE = keccak256("ADMIN_ROLE");

    struct Voter {
        uint256 weight;
        bool voted;
        address delegate;
        bool initialized;
        bool decision;
    }

    /// @dev Field order matches the first implementation's public getter, which the web client reads.
    struct Election {
        uint256 approved;
        uint256 rejected;
        address proposer;
        bool finalized;
        bool decision;
    }

    mapping(bytes32 projectHash => Election) public projectsRegistered;
    /// @notice Bumped when a project is removed, so votes of an earlier registration do not carry over.
    mapping(bytes32 projectHash => uint256) public registrationRound;
    mapping(address user => UserStatus) public statusList;
    /// @notice Number of addresses whose status is Whitelisted (viewers are not voters).
    uint256 public whitelistedCount;
    /// @notice Percentage of `whitelistedCount` that one side must exceed to finalize a vote.
    uint256 public immutable threshold;

    mapping(bytes32 projectHash => mapping(uint256 round => mapping(address voter => Voter))) private _voters;

    event Register(address indexed from, bytes32 projectHash);
    event ProjectEvaluation(bytes32 indexed projectHash, bool isApproved);
    event Vote(bytes32 indexed project, address from, bool decision, uint256 weight);
    event VoteDelegate(address from, address to, bytes32 project, uint256 weight);
    event WhitelistInsert(address indexed user);
    event WhitelistRemove(address indexed user);
    event UserStatusChanged(address indexed user, UserStatus previousStatus, UserStatus newStatus);
    /// @notice The admin role moved: `from` lost it (zero when granted), `to` gained it (zero when revoked).
    event AdminChange(address indexed from, address indexed to);
    event ProjectRemoved(bytes32 indexed projectHash);

    error InvalidThreshold(uint256 threshold);
    error ZeroAddress();
    error ZeroProjectHash();
    error StatusUnchanged(address user, UserStatus status);
    error Blacklisted(address user);
    error NotWhitelisted(address user);
    error ProjectAlreadyRegistered(bytes32 projectHash);
    error ProjectNotFound(bytes32 projectHash);
    error ProjectAlreadyFinalized(bytes32 projectHash);
    error AlreadyVoted(address voter, bytes32 projectHash);
    error SelfDelegation();
    error DelegationLoop(address voter);
    error DelegateNotWhitelisted(address delegate);

    /// @param threshold_ Percentage in [0, 100); 100 or more could never be exceeded by a full electorate.
    constructor(uint256 threshold_) {
        if (threshold_ >= 100) revert InvalidThreshold(threshold_);
        threshold = threshold_;
        _grantRole(DEFAULT_ADMIN_ROLE, msg.sender);
        _grantRole(ADMIN_ROLE, msg.sender);
    }

    // ---------------------------------------------------------------- statuses

    function editUserStatus(address user, UserStatus newStatus) external onlyRole(ADMIN_ROLE) {
        if (user == address(0)) revert ZeroAddress();
        UserStatus previous = statusList[user];
        if (previous == newStatus) revert StatusUnchanged(user, newStatus);
        statusList[user] = newStatus;
        if (previous == UserStatus.Whitelisted) {
            whitelistedCount -= 1;
            emit WhitelistRemove(user);
        }
        if (newStatus == UserStatus.Whitelisted) {
            whitelistedCount += 1;
            emit WhitelistInsert(user);
        }
        emit UserStatusChanged(user, previous, newStatus);
    }

    // ---------------------------------------------------------------- projects

    function registerProject(bytes32 projectHash) external {
        if (statusList[msg.sender] == UserStatus.Blacklisted) revert Blacklisted(msg.sender);
        if (projectHash == bytes32(0)) revert ZeroProjectHash();
        Election storage election = projectsRegistered[projectHash];
        if (election.proposer != address(0)) revert ProjectAlreadyRegistered(projectHash);
        election.proposer = msg.sender;
        emit Register(msg.sender, projectHash);
    }

    /// @notice Two distinct admins call this with the same hash within `APPROVAL_WINDOW_BLOCKS` blocks.
    function removeProject(bytes32 projectHash) external {
        if (projectsRegistered[projectHash].proposer == address(0)) revert ProjectNotFound(projectHash);
        if (!_approve(keccak256(abi.encode(this.removeProject.selector, projectHash)))) return;
        delete projectsRegistered[projectHash];
        registrationRound[projectHash] += 1;
        emit ProjectRemoved(projectHash);
    }

    function isApprovedProposer(address proposer, bytes32 projectHash) external view returns (bool) {
        Election storage election = projectsRegistered[projectHash];
        return proposer != address(0) && election.proposer == proposer && election.finalized && election.decision;
    }

    // ---------------------------------------------------------------- voting

    function voteProposal(bytes32 projectHash, bool decision) external {
        if (statusList[msg.sender] != UserStatus.Whitelisted) revert NotWhitelisted(msg.sender);
        Election storage election = _openElection(projectHash);
        Voter storage voter = _voter(projectHash, msg.sender);
        if (voter.voted) revert AlreadyVoted(msg.sender, projectHash);

        uint256 weight = voter.weight;
        voter.weight = 0;
        voter.voted = true;
        voter.decision = decision;
        if (decision) election.approved += weight;
        else election.rejected += weight;
        emit Vote(projectHash, msg.sender, decision, weight);
        _finalizeIfDecided(projectHash, election);
    }

    /// @notice Hands the caller's weight to `to`, or to the end of the chain `to` already delegated along.
    function delegate(address to, bytes32 projectHash) external {
        if (statusList[msg.sender] != UserStatus.Whitelisted) revert NotWhitelisted(msg.sender);
        if (to == msg.sender) revert SelfDelegation();
        Election storage election = _openElection(projectHash);
        Voter storage sender = _voter(projectHash, msg.sender);
        if (sender.voted) revert AlreadyVoted(msg.sender, projectHash);

        uint256 round = registrationRound[projectHash];
        address target = to;
        while (_voters[projectHash][round][target].delegate != address(0)) {
            target = _voters[projectHash][round][target].delegate;
            if (target == msg.sender) revert DelegationLoop(msg.sender);
        }
        // Weight parked on someone who can never vote would silently vanish.
        if (statusList[target] != UserStatus.Whitelisted) revert DelegateNotWhitelisted(target);

        Voter storage receiver = _voter(projectHash, target);
        uint256 weight = sender.weight;
        sender.weight = 0;
        sender.voted = true;
        sender.delegate = target;
        if (receiver.voted) {
            if (receiver.decision) election.approved += weight;
            else election.rejected += weight;
        } else {
            receiver.weight += weight;
        }
        emit VoteDelegate(msg.sender, target, projectHash, weight);
        _finalizeIfDecided(projectHash, election);
    }

    function getVoter(bytes32 projectHash, address account) external view returns (Voter memory voter) {
        voter = _voters[projectHash][registrationRound[projectHash]][account];
        if (!voter.initialized) voter.weight = 1;
    }

    /// @notice A side finalizes the vote once its weight is strictly greater than this.
    function quorum() public view returns (uint256) {
        return (whitelistedCount * threshold) / 100;
    }

    // ---------------------------------------------------------------- roles

    function hasRole(
        bytes32 role,
        address account
    ) public view override(AccessControl, IProjectRegistry) returns (bool) {
        return super.hasRole(role, account);
    }

    function _grantRole(bytes32 role, address account) internal override returns (bool granted) {
        granted = super._grantRole(role, account);
        if (granted && role == ADMIN_ROLE) emit AdminChange(address(0), account);
    }

    function _revokeRole(bytes32 role, address account) internal override returns (bool revoked) {
        revoked = super._revokeRole(role, account);
        if (revoked && role == ADMIN_ROLE) emit AdminChange(account, address(0));
    }

    function _isAdmin(address account) internal view override returns (bool) {
        return hasRole(ADMIN_ROLE, account);
    }

    // ---------------------------------------------------------------- internals

    function _openElection(bytes32 projectHash) private view returns (Election storage election) {
        election = projectsRegistered[projectHash];
        if (election.proposer == address(0)) revert ProjectNotFound(projectHash);
        if (election.finalized) revert ProjectAlreadyFinalized(projectHash);
    }

    function _voter(bytes32 projectHash, address account) private returns (Voter storage voter) {
        voter = _voters[projectHash][registrationRound[projectHash]][account];
        if (!voter.initialized) {
            voter.initialized = true;
            voter.weight = 1;
        }
    }

    function _finalizeIfDecided(bytes32 projectHash, Election storage election) private {
        uint256 bar = quorum();
        if (election.approved <= bar && election.rejected <= bar) return;
        // A tie rejects: approval needs a strict majority of the weight cast.
        bool approved = election.approved > election.rejected;
        election.finalized = true;
        election.decision = approved;
        emit ProjectEvaluation(projectHash, approved);
    }
}
