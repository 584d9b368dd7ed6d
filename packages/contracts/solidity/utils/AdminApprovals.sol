// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice Two distinct admins must approve the same action within a block window before it runs.
/// @dev An action is identified by a hash of its selector and arguments, so approving "remove project A"
///      never counts towards "remove project B". An approval whose signer lost the admin role, or that is
///      older than the window, no longer counts: the next call starts a fresh round.
abstract contract AdminApprovals {
    uint256 public constant APPROVAL_WINDOW_BLOCKS = 100;

    struct PendingApproval {
        address firstApprover;
        uint64 sinceBlock;
    }

    mapping(bytes32 actionId => PendingApproval) private _pendingApprovals;

    event ActionApproved(bytes32 indexed actionId, address indexed admin, uint256 approvals);

    error NotAdmin(address account);
    error AlreadyApproved(bytes32 actionId, address admin);

    function pendingApproval(bytes32 actionId) external view returns (address firstApprover, uint256 sinceBlock) {
        PendingApproval memory pending = _pendingApprovals[actionId];
        if (!_isLive(pending)) return (address(0), 0);
        return (pending.firstApprover, pending.sinceBlock);
    }

    function _isAdmin(address account) internal view virtual returns (bool);

    /// @return ready True when this call is the second approval and the caller must run the action now.
    function _approve(bytes32 actionId) internal returns (bool ready) {
        if (!_isAdmin(msg.sender)) revert NotAdmin(msg.sender);
        PendingApproval memory pending = _pendingApprovals[actionId];
        if (!_isLive(pending)) {
            _pendingApprovals[actionId] = PendingApproval(msg.sender, uint64(block.number));
            emit ActionApproved(actionId, msg.sender, 1);
            return false;
        }
        if (pending.firstApprover == msg.sender) revert AlreadyApproved(actionId, msg.sender);
        delete _pendingApprovals[actionId];
        emit ActionApproved(actionId, msg.sender, 2);
        return true;
    }

    function _isLive(PendingApproval memory pending) private view returns (bool) {
        return
            pending.firstApprover != address(0) &&
            block.number - pending.sinceBlock < APPROVAL_WINDOW_BLOCKS &&
            _isAdmin(pending.firstApprover);
    }
}
