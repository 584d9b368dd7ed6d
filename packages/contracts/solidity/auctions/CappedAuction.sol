// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Auction} from "./Auction.sol";

/// @title Base of the types that sell a fixed supply minted to the auction at creation.
abstract contract CappedAuction is Auction {
    /// @notice Supply on sale now (it only changes for the strict Dutch type).
    uint256 public numberOfTokensToBeDistributed;
    uint256 public initialSupply;
    /// @notice Most bid coin one address may spend in this auction; 0 means no limit.
    uint256 public fundLimitPerUser;
    /// @notice Bid coin charged per bidder.
    mapping(address bidder => uint256) public biddingBook;

    function _initialize(AuctionParams calldata params) internal override {
        if (params.numberOfTokensToBeDistributed == 0) revert InvalidParams("numberOfTokensToBeDistributed");
        numberOfTokensToBeDistributed = params.numberOfTokensToBeDistributed;
        initialSupply = params.numberOfTokensToBeDistributed;
        fundLimitPerUser = params.limit;
        _initializeType(params);
    }

    function _initializeType(AuctionParams calldata params) internal virtual;

    function _beforeStart() internal view override {
        uint256 balance = projectToken.balanceOf(address(this));
        if (balance < initialSupply) revert SupplyNotFunded(balance, initialSupply);
    }

    function _record(address bidder, uint256 charged) internal {
        uint256 total = biddingBook[bidder] + charged;
        if (fundLimitPerUser != 0 && total > fundLimitPerUser) revert LimitExceeded(total, fundLimitPerUser);
        biddingBook[bidder] = total;
    }

    /// @dev Unsold supply goes back to the project by default; some types burn it.
    function _disposeUnsold(uint256 amount) internal virtual {
        _sendTokens(projectWallet, amount);
    }
}
